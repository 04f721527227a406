/* NVTX at its limits, from a program that knows nothing of tc (only nvtx3):
 * tests/collect/nvtx_limits_test.cpp runs each mode under tc-profile and
 * checks the store. Each mode prints what the NVTX calls returned that the
 * spec fixes, and "done".
 *
 *   cross N    N start/end ranges ("cross"), each ended on a new thread that
 *              then exits (two threads alive at a time); odd ones started on
 *              the new thread and ended on the main one
 *   deep N     N ranges pushed in the default domain ("d<i>") and N in domain
 *              "deep" ("x<i>"), then pops of domains with nothing open (the
 *              default domain on a new thread, "empty"), a mark "after", and
 *              every range popped; prints the pops' results that were wrong
 *   names N    N distinct messages ("n<i>"), one push/pop each
 *   domains N  N domains of distinct names ("dom<i>"), one push/pop each
 *   samedomain N  N domains of one name ("same"), one push/pop each; prints
 *              how many distinct handles nvtxDomainCreateA returned
 *   strings N  N distinct registered strings ("s<i>") in domain "reg", one
 *              push/pop each; then "s0" registered again: prints whether the
 *              handle is the first one's
 *   big N      N distinct messages of 1 MiB ("<i>" then 'm's), one push/pop
 *              each; prints the growth of the resident set in MiB */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nvtxRangeId_t cross_id;

static void* end_cross(void* arg) {
  (void)arg;
  nvtxRangeEnd(cross_id);
  return NULL;
}

static void* start_cross(void* arg) {
  (void)arg;
  cross_id = nvtxRangeStartA("cross");
  return NULL;
}

static void cross(long n) {
  for (long i = 0; i < n; ++i) {
    pthread_t t;
    if (i % 2 == 0) {
      cross_id = nvtxRangeStartA("cross");
      pthread_create(&t, NULL, end_cross, NULL);
      pthread_join(t, NULL);
    } else {
      pthread_create(&t, NULL, start_cross, NULL);
      pthread_join(t, NULL);
      nvtxRangeEnd(cross_id);
    }
  }
}

static int wrong = 0;

static void expect(const char* what, long i, int got, int want) {
  if (got != want && wrong++ < 10) printf("%s %ld returned %d, not %d\n", what, i, got, want);
}

static void* pop_default(void* arg) {
  (void)arg;
  expect("pop of the default domain on a new thread", 0, nvtxRangePop(), -1);
  return NULL;
}

static nvtxEventAttributes_t attributes(const char* message) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

static void deep(long n) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("deep"), empty = nvtxDomainCreateA("empty");
  char name[32];
  for (long i = 0; i < n; ++i) {
    snprintf(name, sizeof name, "d%ld", i);
    expect("push", i, nvtxRangePushA(name), (int)i);
    snprintf(name, sizeof name, "x%ld", i);
    nvtxEventAttributes_t a = attributes(name);
    expect("domain push", i, nvtxDomainRangePushEx(d, &a), (int)i);
  }
  pthread_t t;
  pthread_create(&t, NULL, pop_default, NULL);
  pthread_join(t, NULL);
  expect("pop of an empty domain", 0, nvtxDomainRangePop(empty), -1);
  nvtxMarkA("after");
  for (long i = n - 1; i >= 0; --i) {
    expect("domain pop", i, nvtxDomainRangePop(d), (int)i);
    expect("pop", i, nvtxRangePop(), (int)i);
  }
  expect("pop past the bottom", 0, nvtxRangePop(), -1);
  expect("domain pop past the bottom", 0, nvtxDomainRangePop(d), -1);
  printf("%d wrong\n", wrong);
}

static void names(long n) {
  char name[32];
  for (long i = 0; i < n; ++i) {
    snprintf(name, sizeof name, "n%ld", i);
    nvtxRangePushA(name);
    nvtxRangePop();
  }
}

static void domains(long n, int same) {
  char name[32];
  nvtxDomainHandle_t first = NULL;
  long distinct = 0;
  nvtxEventAttributes_t a = attributes("in");
  for (long i = 0; i < n; ++i) {
    snprintf(name, sizeof name, "dom%ld", i);
    nvtxDomainHandle_t d = nvtxDomainCreateA(same ? "same" : name);
    if (d != first) ++distinct;
    if (first == NULL) first = d;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
  }
  if (same) printf("%ld distinct handles\n", distinct);
}

static void strings(long n) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("reg");
  char text[32];
  nvtxStringHandle_t first = NULL;
  for (long i = 0; i < n; ++i) {
    snprintf(text, sizeof text, "s%ld", i);
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, text);
    if (i == 0) first = s;
    nvtxEventAttributes_t a = attributes(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
  }
  printf("s0 again: %s\n", nvtxDomainRegisterStringA(d, "s0") == first ? "same handle" : "another handle");
}

static long rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
  }
  if (f) fclose(f);
  return kib;
}

static void big(long n) {
  const size_t len = 1u << 20;
  char* m = malloc(len + 1);
  memset(m, 'm', len);
  m[len] = '\0';
  nvtxRangePushA("warm-up");
  nvtxRangePop();
  long before = rss_kib();
  for (long i = 0; i < n; ++i) {
    int k = snprintf(m, 32, "%ld", i);
    m[k] = 'm';
    nvtxRangePushA(m);
    nvtxRangePop();
  }
  printf("rss grew %ld MiB\n", (rss_kib() - before) / 1024);
  free(m);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s cross|deep|names|domains|samedomain|strings|big N\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  long n = atol(argv[2]);
  if (strcmp(mode, "cross") == 0) cross(n);
  else if (strcmp(mode, "deep") == 0) deep(n);
  else if (strcmp(mode, "names") == 0) names(n);
  else if (strcmp(mode, "domains") == 0) domains(n, 0);
  else if (strcmp(mode, "samedomain") == 0) domains(n, 1);
  else if (strcmp(mode, "strings") == 0) strings(n);
  else if (strcmp(mode, "big") == 0) big(n);
  else return 2;
  printf("done\n");
  return 0;
}
