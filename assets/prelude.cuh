// gridlab's prelude: compiled in front of every session's CUDA code on the GPU backend, so that
// kernels written for the simulator compile unchanged with NVRTC (which has no system headers).
//
// - The constants the simulator predefines: INFINITY, NAN, FLT_MAX, FLT_MIN, DBL_MAX, INT_MAX,
//   INT_MIN, UINT_MAX (only where NVRTC does not define them already).
// - assert(cond): stops the kernel with a message naming the condition, file and line, as
//   <assert.h> does under nvcc.
// - The fixed-width integers of <stdint.h> (int8_t ... uint64_t), which the simulator knows
//   without a header: the same types CUDA's own <cuda/std/cstdint> declares under NVRTC (64-bit
//   ones are `long long`, not glibc's `long`), because cooperative groups include that header
//   and C++ allows a typedef to be repeated only with the same type.
// - gridlab_global_index(): blockIdx.x * blockDim.x + threadIdx.x, Numba's cuda.grid(1).
// - std::min, std::sqrt, std::size_t ...: C++ code spells CUDA's math functions in `std`, and
//   nvcc's headers put them there; NVRTC's `std` is empty, so the global ones are brought in
//   (each checked to compile under NVRTC 13), as the simulator reads `std::name` as `name`.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38f
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623158e+308
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef INT_MIN
#define INT_MIN (-2147483647 - 1)
#endif
#ifndef UINT_MAX
#define UINT_MAX 4294967295u
#endif
#ifndef assert
extern "C" __device__ void __assertfail(const char *message, const char *file, unsigned line, const char *function, unsigned long long char_size);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
__device__ __forceinline__ unsigned gridlab_global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
namespace std {
using ::size_t;
using ::min; using ::max; using ::abs; using ::fabs; using ::fmin; using ::fmax; using ::fma;
using ::sqrt; using ::cbrt; using ::hypot; using ::pow; using ::exp; using ::exp2; using ::log; using ::log2;
using ::sin; using ::cos; using ::tan; using ::tanh; using ::atan2; using ::erf;
using ::floor; using ::ceil; using ::round; using ::trunc; using ::rint; using ::nearbyint; using ::lround; using ::lrint;
using ::fmod; using ::copysign; using ::signbit; using ::isnan; using ::isinf; using ::isfinite;
}
