/* The naive matrix multiply of bench/scale.rs in C, one thread: the loop a learner would write
 * on the CPU instead. Prints the loop's own time in seconds, then a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n), *C = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; i++) {
        A[i] = (i % 7) * 0.25f;
        B[i] = (i % 7) * 0.25f;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int row = 0; row < n; row++)
        for (int col = 0; col < n; col++) {
            float acc = 0.0f;
            for (int k = 0; k < n; k++) acc += A[row * n + k] * B[k * n + col];
            C[row * n + col] = acc;
        }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f\n%f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, C[n * n / 2 + 3]);
    return 0;
}
