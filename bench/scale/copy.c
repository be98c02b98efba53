/* The copy of bench/scale.rs in C, one thread. Prints the loop's own time in seconds, then a
 * checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1L << 24;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    for (long i = 0; i < n; i++) {
        a[i] = (i % 7) * 0.25f;
        b[i] = 0.0f;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) b[i] = a[i];
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f\n%f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, b[n / 2 + 3]);
    return 0;
}
