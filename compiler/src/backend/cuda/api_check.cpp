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

TC_SAME(Driver, cuInit, ::cuInit);
TC_SAME(Driver, cuDeviceGetCount, ::cuDeviceGetCount);
TC_SAME(Driver, cuDeviceGet, ::cuDeviceGet);
TC_SAME(Driver, cuDeviceGetAttribute, ::cuDeviceGetAttribute);
TC_SAME(Driver, cuDeviceGetName, ::cuDeviceGetName);
TC_SAME(Driver, cuDevicePrimaryCtxRetain, ::cuDevicePrimaryCtxRetain);
TC_SAME(Driver, cuCtxSetCurrent, ::cuCtxSetCurrent);
TC_SAME(Driver, cuCtxSynchronize, ::cuCtxSynchronize);
TC_SAME(Driver, cuModuleLoadData, ::cuModuleLoadData);
TC_SAME(Driver, cuModuleGetFunction, ::cuModuleGetFunction);
TC_SAME(Driver, cuLaunchKernel, ::cuLaunchKernel);
TC_SAME(Driver, cuMemAlloc, ::cuMemAlloc_v2);
TC_SAME(Driver, cuMemFree, ::cuMemFree_v2);
TC_SAME(Driver, cuMemGetInfo, ::cuMemGetInfo_v2);
TC_SAME(Driver, cuMemcpyHtoD, ::cuMemcpyHtoD_v2);
TC_SAME(Driver, cuMemcpyDtoH, ::cuMemcpyDtoH_v2);
TC_SAME(Driver, cuMemcpyHtoDAsync, ::cuMemcpyHtoDAsync_v2);
TC_SAME(Driver, cuMemsetD8Async, ::cuMemsetD8Async);
TC_SAME(Driver, cuStreamCreate, ::cuStreamCreate);
TC_SAME(Driver, cuStreamSynchronize, ::cuStreamSynchronize);
TC_SAME(Driver, cuEventCreate, ::cuEventCreate);
TC_SAME(Driver, cuEventRecord, ::cuEventRecord);
TC_SAME(Driver, cuEventElapsedTime, ::cuEventElapsedTime);
TC_SAME(Driver, cuGetErrorString, ::cuGetErrorString);
TC_SAME(Nvrtc, nvrtcVersion, ::nvrtcVersion);
TC_SAME(Nvrtc, nvrtcCreateProgram, ::nvrtcCreateProgram);
TC_SAME(Nvrtc, nvrtcCompileProgram, ::nvrtcCompileProgram);
TC_SAME(Nvrtc, nvrtcGetProgramLogSize, ::nvrtcGetProgramLogSize);
TC_SAME(Nvrtc, nvrtcGetProgramLog, ::nvrtcGetProgramLog);
TC_SAME(Nvrtc, nvrtcGetCUBINSize, ::nvrtcGetCUBINSize);
TC_SAME(Nvrtc, nvrtcGetCUBIN, ::nvrtcGetCUBIN);
TC_SAME(Nvrtc, nvrtcGetPTXSize, ::nvrtcGetPTXSize);
TC_SAME(Nvrtc, nvrtcGetPTX, ::nvrtcGetPTX);
TC_SAME(Nvrtc, nvrtcDestroyProgram, ::nvrtcDestroyProgram);
TC_SAME(Nvrtc, nvrtcGetErrorString, ::nvrtcGetErrorString);
TC_SAME(Cublas, cublasCreate, ::cublasCreate_v2);
TC_SAME(Cublas, cublasSetStream, ::cublasSetStream_v2);
TC_SAME(Cublas, cublasSetPointerMode, ::cublasSetPointerMode_v2);
TC_SAME(Cublas, cublasSgemmStridedBatched, ::cublasSgemmStridedBatched);
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
