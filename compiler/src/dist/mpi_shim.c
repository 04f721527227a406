/* libtc_mpi.so: the only part of tc that links MPI. libtc dlopen()s it when a
 * program runs under mpirun with more than one rank (compiler/src/dist.cpp),
 * so a program started without a launcher needs no MPI at run time. A C ABI of
 * a few calls; each returns 0 or an MPI error code (tc_mpi_error says it). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TC_MPI_API __attribute__((visibility("default")))

static char g_error[MPI_MAX_ERROR_STRING + 64];

static int check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    snprintf(g_error, sizeof g_error, "%s: %s", call, text);
  }
  return rc;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

TC_MPI_API const char* tc_mpi_error(void) { return g_error; }

TC_MPI_API int tc_mpi_init(int* rank, int* size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int rc = check(MPI_Init(NULL, NULL), "MPI_Init");
    if (rc) return rc;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = check(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank");
  return rc ? rc : check(MPI_Comm_size(MPI_COMM_WORLD, size), "MPI_Comm_size");
}

TC_MPI_API int tc_mpi_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized ? 0 : check(MPI_Finalize(), "MPI_Finalize");
}

/* Ends every rank of the job (a rank that fails must not leave the others
 * waiting for it in a collective, nor wait for them in MPI_Finalize). */
TC_MPI_API void tc_mpi_abort(int code) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

TC_MPI_API int tc_mpi_allreduce_sum_f32(float* data, int64_t count) {
  /* In pieces of at most INT_MAX elements (MPI counts are int). */
  while (count > 0) {
    int n = count > 0x7fffffff ? 0x7fffffff : (int)count;
    int rc = check(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    if (rc) return rc;
    data += n;
    count -= n;
  }
  return 0;
}

TC_MPI_API int tc_mpi_bcast_f32(float* data, int64_t count, int root) {
  while (count > 0) {
    int n = count > 0x7fffffff ? 0x7fffffff : (int)count;
    int rc = check(MPI_Bcast(data, n, MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast");
    if (rc) return rc;
    data += n;
    count -= n;
  }
  return 0;
}

TC_MPI_API int tc_mpi_barrier(void) { return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

/* This rank's CLOCK_MONOTONIC offset to rank 0's (rank 0's clock is about
 * local + offset), from `trials` ping-pongs with rank 0, one rank at a time:
 * the trial with the shortest round trip wins; *error_ns is half of it. */
TC_MPI_API int tc_mpi_clock_offset(int trials, int64_t* offset_ns, int64_t* error_ns) {
  int rank = 0, size = 1, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  *offset_ns = 0;
  *error_ns = 0;
  for (int peer = 1; peer < size; ++peer) {
    if (rank == 0) {
      for (int k = 0; k < trials; ++k) {
        int64_t t1;
        rc = check(MPI_Recv(&t1, 1, MPI_INT64_T, peer, 7001, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        if (rc) return rc;
        int64_t t2 = now_ns();
        rc = check(MPI_Send(&t2, 1, MPI_INT64_T, peer, 7002, MPI_COMM_WORLD), "MPI_Send");
        if (rc) return rc;
      }
    } else if (rank == peer) {
      int64_t best = -1;
      for (int k = 0; k < trials; ++k) {
        int64_t t1 = now_ns(), t2;
        rc = check(MPI_Send(&t1, 1, MPI_INT64_T, 0, 7001, MPI_COMM_WORLD), "MPI_Send");
        if (rc) return rc;
        rc = check(MPI_Recv(&t2, 1, MPI_INT64_T, 0, 7002, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        if (rc) return rc;
        int64_t t3 = now_ns();
        if (best < 0 || t3 - t1 < best) {
          best = t3 - t1;
          *offset_ns = t2 - (t1 + t3) / 2;
          *error_ns = best / 2;
        }
      }
    }
  }
  return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}
