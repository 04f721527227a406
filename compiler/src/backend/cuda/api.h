// The parts of the CUDA driver API, NVRTC and cuBLAS the backend calls, as
// function tables filled by dlopen()/dlsym(): tc links none of them, so a tc
// binary starts on a machine without CUDA (the driver's link stub would stop
// it from starting). The types are declared here, not taken from the
// toolkit's headers, so this compiles without the toolkit; api_check.cpp
// asserts them against the real headers when the toolkit is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tc::detail::cuda::api {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// Each table is one list, F(name, return type, (parameters), suffix): its
// fields, the symbols api.cpp looks them up by (name + suffix: the versioned
// one, cuMemAlloc_v2) and what api_check.cpp checks against the toolkit.
#define TC_CUDA_FIELD(name, ret, params, suffix) ret(*name) params;

#define TC_CUDA_DRIVER_FUNCTIONS(F)                                                                            \
  F(cuInit, CUresult, (unsigned), )                                                                            \
  F(cuDeviceGetCount, CUresult, (int*), )                                                                      \
  F(cuDeviceGet, CUresult, (CUdevice*, int), )                                                                 \
  F(cuDeviceGetAttribute, CUresult, (int*, int, CUdevice), )                                                   \
  F(cuDeviceGetName, CUresult, (char*, int, CUdevice), )                                                       \
  F(cuDevicePrimaryCtxRetain, CUresult, (CUcontext*, CUdevice), )                                              \
  F(cuCtxSetCurrent, CUresult, (CUcontext), )                                                                  \
  F(cuCtxSynchronize, CUresult, (), )                                                                          \
  F(cuModuleLoadData, CUresult, (CUmodule*, const void*), )                                                    \
  F(cuModuleGetFunction, CUresult, (CUfunction*, CUmodule, const char*), )                                     \
  F(cuLaunchKernel, CUresult,                                                                                  \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**), ) \
  F(cuMemAlloc, CUresult, (CUdeviceptr*, std::size_t), _v2)                                                    \
  F(cuMemFree, CUresult, (CUdeviceptr), _v2)                                                                   \
  F(cuMemGetInfo, CUresult, (std::size_t*, std::size_t*), _v2)                                                 \
  F(cuMemcpyHtoD, CUresult, (CUdeviceptr, const void*, std::size_t), _v2)                                      \
  F(cuMemcpyDtoH, CUresult, (void*, CUdeviceptr, std::size_t), _v2)                                            \
  F(cuMemcpyHtoDAsync, CUresult, (CUdeviceptr, const void*, std::size_t, CUstream), _v2)                       \
  F(cuMemsetD8Async, CUresult, (CUdeviceptr, unsigned char, std::size_t, CUstream), )                          \
  F(cuStreamCreate, CUresult, (CUstream*, unsigned), )                                                         \
  F(cuStreamSynchronize, CUresult, (CUstream), )                                                               \
  F(cuEventCreate, CUresult, (CUevent*, unsigned), )                                                           \
  F(cuEventRecord, CUresult, (CUevent, CUstream), )                                                            \
  F(cuGetErrorString, CUresult, (CUresult, const char**), )

struct Driver {
  TC_CUDA_DRIVER_FUNCTIONS(TC_CUDA_FIELD)
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);  // _v2 in CUDA 13, else the first one
};

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
#define TC_CUDA_NVRTC_FUNCTIONS(F)                                                                             \
  F(nvrtcVersion, nvrtcResult, (int*, int*), )                                                                 \
  F(nvrtcCreateProgram, nvrtcResult, (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*), ) \
  F(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char* const*), )                               \
  F(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, std::size_t*), )                                       \
  F(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char*), )                                                  \
  F(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, std::size_t*), )                                            \
  F(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char*), )                                                       \
  F(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram, std::size_t*), )                                              \
  F(nvrtcGetPTX, nvrtcResult, (nvrtcProgram, char*), )                                                         \
  F(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram*), )                                                       \
  F(nvrtcGetErrorString, const char*, (nvrtcResult), )
struct Nvrtc {
  TC_CUDA_NVRTC_FUNCTIONS(TC_CUDA_FIELD)
};

using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
constexpr int CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1;
#define TC_CUDA_CUBLAS_FUNCTIONS(F)                                                                            \
  F(cublasCreate, cublasStatus_t, (cublasHandle_t*), _v2)                                                      \
  F(cublasSetStream, cublasStatus_t, (cublasHandle_t, CUstream), _v2)                                          \
  F(cublasSetPointerMode, cublasStatus_t, (cublasHandle_t, int), _v2)                                          \
  F(cublasSgemmStridedBatched, cublasStatus_t, (cublasHandle_t, int, int, int, int, int, const float*, const float*, int, \
                                                long long, const float*, int, long long, const float*, float*, int,      \
                                                long long, int), )
struct Cublas {
  TC_CUDA_CUBLAS_FUNCTIONS(TC_CUDA_FIELD)
};

// CUPTI's external correlation, when libcupti is already in the process
// (loaded by libtc_cupti.so, the injection library tc-profile hands to the
// driver): around each run tc pushes the execution id, so the kernels and
// copies CUPTI records carry it. tc never loads libcupti itself.
using CUptiResult = int;
constexpr int CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 = 5;  // CUSTOM0 and CUSTOM1 are PyTorch profiler's (Kineto)
struct Cupti {
  CUptiResult (*cuptiActivityPushExternalCorrelationId)(int, uint64_t);
  CUptiResult (*cuptiActivityPopExternalCorrelationId)(int, uint64_t*);
};
// nullptr when libcupti is not loaded (looked up once, at the first call).
const Cupti* cupti_if_loaded();

// The process's tables, loaded at first use; nullptr with `why` (one line)
// when the library or one of its functions is missing.
const Driver* driver(std::string* why);
const Nvrtc* nvrtc(std::string* why);
const Cublas* cublas(std::string* why);

// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"-style text.
std::string driver_error(const char* call, CUresult r);

}  // namespace tc::detail::cuda::api
