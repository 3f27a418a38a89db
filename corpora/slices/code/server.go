// A tiny HTTP server that greets the caller in the language they ask for.
package main

import (
	"fmt"
	"log"
	"net/http"
)

var greetings = map[string]string{
	"en": "Hello",
	"es": "Hola",
	"hi": "नमस्ते",
	"ja": "こんにちは",
}

func greet(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("lang")
	word, ok := greetings[lang]
	if !ok {
		http.Error(w, "unknown language: "+lang, http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s, %s!\n", word, r.URL.Query().Get("name"))
}

func main() {
	http.HandleFunc("/greet", greet)
	log.Fatal(http.ListenAndServe(":8080", nil))
}
