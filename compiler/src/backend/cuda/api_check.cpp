// Compile-time check of api.h against the toolkit's own headers (built only
// when CMake finds the CUDA toolkit; nothing here is linked or called): each
// function table entry has the real function's signature once the real types
// are mapped to api.h's, and the constants have the real values.
#include <cublas_v2.h>
#include <cuda.h>
#include <cupti_activity.h>
#include <nvrtc.h>

#include <type_traits>

#include "api.h"

namespace {
namespace a = tc::detail::cuda::api;

// A real type -> api.h's type.
template <class T> struct M { using type = T; };
template <class T> struct M<T*> { using type = typename M<T>::type*; };
template <class T> struct M<const T> { using type = const typename M<T>::type; };
template <> struct M<CUresult> { using type = a::CUresult; };
template <> struct M<CUdevice_attribute> { using type = int; };
template <> struct M<CUctx_st> { using type = std::remove_pointer_t<a::CUcontext>; };
template <> struct M<CUmod_st> { using type = std::remove_pointer_t<a::CUmodule>; };
template <> struct M<CUfunc_st> { using type = std::remove_pointer_t<a::CUfunction>; };
template <> struct M<CUstream_st> { using type = std::remove_pointer_t<a::CUstream>; };
template <> struct M<CUevent_st> { using type = std::remove_pointer_t<a::CUevent>; };
template <> struct M<nvrtcResult> { using type = a::nvrtcResult; };
template <> struct M<_nvrtcProgram> { using type = std::remove_pointer_t<a::nvrtcProgram>; };
template <> struct M<cublasStatus_t> { using type = a::cublasStatus_t; };
template <> struct M<cublasContext> { using type = std::remove_pointer_t<a::cublasHandle_t>; };
template <> struct M<cublasOperation_t> { using type = int; };
template <> struct M<CUptiResult> { using type = a::CUptiResult; };
template <> struct M<CUpti_ExternalCorrelationKind> { using type = int; };
template <> struct M<cublasPointerMode_t> { using type = int; };
template <class R, class... Args> struct M<R(Args...)> { using type = typename M<R>::type (*)(typename M<Args>::type...); };

#define TC_SAME(table, field, real) \
  static_assert(std::is_same_v<decltype(a::table::field), M<decltype(real)>::type>, #real " does not match api.h")

// api.h's lists: each entry against the toolkit's function of its name and suffix.
#define TC_SAME_DRIVER(name, ret, params, suffix) TC_SAME(Driver, name, ::name##suffix);
#define TC_SAME_NVRTC(name, ret, params, suffix) TC_SAME(Nvrtc, name, ::name##suffix);
#define TC_SAME_CUBLAS(name, ret, params, suffix) TC_SAME(Cublas, name, ::name##suffix);
TC_CUDA_DRIVER_FUNCTIONS(TC_SAME_DRIVER)
TC_SAME(Driver, cuEventElapsedTime, ::cuEventElapsedTime);
TC_CUDA_NVRTC_FUNCTIONS(TC_SAME_NVRTC)
TC_CUDA_CUBLAS_FUNCTIONS(TC_SAME_CUBLAS)
TC_SAME(Cupti, cuptiActivityPushExternalCorrelationId, ::cuptiActivityPushExternalCorrelationId);
TC_SAME(Cupti, cuptiActivityPopExternalCorrelationId, ::cuptiActivityPopExternalCorrelationId);
static_assert(a::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 == ::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);

static_assert(std::is_same_v<a::CUdeviceptr, ::CUdeviceptr> && std::is_same_v<a::CUdevice, ::CUdevice>);
static_assert(sizeof(a::CUresult) == sizeof(::CUresult) && sizeof(a::nvrtcResult) == sizeof(::nvrtcResult) &&
              sizeof(a::cublasStatus_t) == sizeof(::cublasStatus_t));
static_assert(a::CUDA_SUCCESS == ::CUDA_SUCCESS && a::CUDA_ERROR_OUT_OF_MEMORY == ::CUDA_ERROR_OUT_OF_MEMORY &&
              a::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE);
static_assert(a::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR &&
              a::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(a::CUBLAS_OP_N == ::CUBLAS_OP_N && a::CUBLAS_OP_T == ::CUBLAS_OP_T &&
              a::CUBLAS_POINTER_MODE_HOST == ::CUBLAS_POINTER_MODE_HOST &&
              a::CUBLAS_POINTER_MODE_DEVICE == ::CUBLAS_POINTER_MODE_DEVICE);

}  // namespace
