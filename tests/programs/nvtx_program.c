/* A program that knows nothing of tc: it includes only nvtx3/nvToolsExt.h.
 * The NVTX end-to-end tests run it under tc-profile and compare the store
 * with what it emitted (tests/collect/nvtx_test.cpp):
 *
 *   main thread:  "main" [ "setup" ] marks "begin", "end"
 *   workers 1-3:  "worker" [ "chunk" x (2+i) [ "inner" ] ]   named "worker-i"
 *                 domain "physics": push "step" (a registered string),
 *                 category 7 named "solver", colour 0xFF00FF00, payload i,
 *                 a mark with a double payload 2.5, and "step" popped
 *                 after the default domain's "worker" (domains interleave)
 *   start/end:    "io" started on the main thread, ended on worker 1
 *   unicode:      push L"grüße" / pop
 *
 * --hold: push "held" (and "inner-held") and print "holding", then wait to be killed.
 * Prints "done" at the end. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

static nvtxDomainHandle_t physics;
static nvtxStringHandle_t step_name;
static nvtxRangeId_t io_range;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t io_started = PTHREAD_COND_INITIALIZER;
static int io_ready = 0;

/* Waits until the monotonic clock has moved 2 us on: two NVTX calls in a row
 * can get the same timestamp (about 10 ns apart here), and the test tells
 * which range ended first by their ends. */
static void let_the_clock_move(void) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000);
}

static void* worker(void* arg) {
  long i = (long)arg;
  char name[32];
  snprintf(name, sizeof name, "worker-%ld", i);
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
  nvtxRangePushA("worker");
  let_the_clock_move();

  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = 7;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00u;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = i;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = step_name;
  nvtxDomainRangePushEx(physics, &a);

  for (long c = 0; c < 2 + i; ++c) {
    nvtxRangePushA("chunk");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxEventAttributes_t m;
  memset(&m, 0, sizeof m);
  m.version = NVTX_VERSION;
  m.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  m.payload.dValue = 2.5;
  m.messageType = NVTX_MESSAGE_TYPE_ASCII;
  m.message.ascii = "physics.mark";
  nvtxDomainMarkEx(physics, &m);

  nvtxRangePop();               /* "worker" (default domain) ends first */
  let_the_clock_move();
  nvtxDomainRangePop(physics);  /* then "step" */
  if (i == 1) {
    pthread_mutex_lock(&mu);
    while (!io_ready) pthread_cond_wait(&io_started, &mu);
    pthread_mutex_unlock(&mu);
    nvtxRangeEnd(io_range);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
  if (hold) {
    nvtxRangePushA("held");
    nvtxRangePushA("inner-held");
    nvtxMarkA("before-kill");
    printf("holding\n");
    fflush(stdout);
    for (;;) pause();
  }
  physics = nvtxDomainCreateA("physics");
  step_name = nvtxDomainRegisterStringA(physics, "step");
  nvtxDomainNameCategoryA(physics, 7, "solver");
  nvtxRangePushA("main");
  nvtxMarkA("begin");
  nvtxRangePushA("setup");
  nvtxRangePop();
  nvtxRangePushW(L"grüße");
  nvtxRangePop();
  pthread_t t[3];
  for (long i = 0; i < 3; ++i) pthread_create(&t[i], NULL, worker, (void*)(i + 1));
  io_range = nvtxRangeStartA("io");
  pthread_mutex_lock(&mu);
  io_ready = 1;
  pthread_cond_broadcast(&io_started);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  nvtxMarkA("end");
  nvtxRangePop();
  printf("done\n");
  return 0;
}
