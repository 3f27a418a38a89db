/* Print the Adler-32 checksum of standard input. */
#include <stdint.h>
#include <stdio.h>

#define MOD_ADLER 65521u

int main(void) {
    uint32_t a = 1, b = 0;
    int c;
    while ((c = getchar()) != EOF) {
        a = (a + (uint32_t)c) % MOD_ADLER;
        b = (b + a) % MOD_ADLER;
    }
    printf("%08x\n", (b << 16) | a);
    return 0;
}
