import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** A small library catalogue: add books, then find one by its title. */
public class Library {
    record Book(String title, String language, int year) {}

    private final List<Book> books = new ArrayList<>();

    public void add(String title, String language, int year) {
        books.add(new Book(title, language, year));
    }

    public Optional<Book> find(String title) {
        return books.stream().filter(b -> b.title().equalsIgnoreCase(title)).findFirst();
    }

    public static void main(String[] args) {
        Library library = new Library();
        library.add("The Weaver", "English", 1889);
        library.add("El tejedor", "Spanish", 2015);
        System.out.println(library.find("el tejedor").map(Book::year).orElse(-1));
    }
}
