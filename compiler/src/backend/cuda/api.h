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

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);        // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr);                        // cuMemFree_v2
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*);      // cuMemGetInfo_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t);  // cuMemcpyHtoD_v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);        // cuMemcpyDtoH_v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, std::size_t, CUstream);  // cuMemcpyHtoDAsync_v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);  // _v2 in CUDA 13, else the first one
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
struct Nvrtc {
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  const char* (*nvrtcGetErrorString)(nvrtcResult);
};

using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
constexpr int CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1;
struct Cublas {
  cublasStatus_t (*cublasCreate)(cublasHandle_t*);  // cublasCreate_v2
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream);  // cublasSetStream_v2
  cublasStatus_t (*cublasSetPointerMode)(cublasHandle_t, int);  // cublasSetPointerMode_v2
  cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const float*, const float*, int,
                                              long long, const float*, int, long long, const float*, float*, int, long long,
                                              int);
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
