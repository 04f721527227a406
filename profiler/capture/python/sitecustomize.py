"""tc's Python start-up hook: marks each training step of a PyTorch program.

tc-profile puts the directory of this file first on PYTHONPATH (unless
--no-python-hooks), so Python imports it at start-up as `sitecustomize`. It
  - runs the sitecustomize it hides (the next one on sys.path), as
    opentelemetry-instrument and ddtrace-run do;
  - imports nothing itself: only when the program imports torch does it
    register torch's global optimizer step hook
    (torch.optim.optimizer.register_optimizer_step_post_hook);
  - marks each step() of the first optimizer that steps with an NVTX mark
    "tc.optimizer_step" (torch.cuda.nvtx.mark, which tc's NVTX capture records
    on any machine, GPU or not), and the moment torch was imported with
    "tc.optimizer_steps_start". The collector turns the marks into the run's
    steps (tc/collect/collector.h: kStepMark).
Cost: one NVTX mark per step, a few microseconds (docs/frameworks.md).

For JAX (only once the program imports jax, and only when tc-profile set
TC_JAX_LOG_DIR) it writes DIR/jax-PID.log, JSON lines that the collector
imports at the end of the run (tc/import/import.h, import_jax_log):
  - the jax.monitoring durations of /jax/core/compile/* (tracing, lowering,
    backend compile), each with its fun_name;
  - the "TRACING CACHE MISS" explanations of jax_explain_cache_misses, which
    it turns on (their text as JAX wrote it; printed only if you turned the
    option on yourself);
  - each call of a jax.jit function that is not inside another jitted
    function's call (the collector counts the calls of the one called most
    as the steps);
  - float()/int()/bool()/item()/tolist()/numpy.asarray()/printing of a jax
    Array by the program's own code, with its file:line and how long it
    waited (a forced evaluation).
The file holds at most 64 MiB; the collector trusts none of it.
"""
import functools
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain():
    """Runs the sitecustomize this one hides, if any."""
    import importlib.machinery
    import importlib.util

    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        where = os.path.abspath(entry or os.getcwd())
        if where == _HERE:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry or "."])
        if spec is None or spec.origin is None or os.path.dirname(os.path.abspath(spec.origin)) == _HERE:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return


_XLA_STEPS = []  # not empty once the PyTorch/XLA hook counts steps by torch_xla.sync()


def _register(torch):
    try:
        mark = torch.cuda.nvtx.mark
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except Exception:  # a torch without NVTX or without global step hooks: no steps
        return
    first = []

    def after_step(optimizer, args, kwargs):
        if _XLA_STEPS:  # PyTorch/XLA's steps are its syncs
            return
        if not first:
            first.append(id(optimizer))
        if first[0] == id(optimizer):
            mark("tc.optimizer_step")

    try:
        mark("tc.optimizer_steps_start")
        register_optimizer_step_post_hook(after_step)
    except Exception:
        pass


class _Watcher:
    """A meta path finder that calls after(module) once the program imports one of `register` (name -> after)."""

    def __init__(self, register):
        self.register = dict(register)

    def find_spec(self, name, path=None, target=None):
        if name not in self.register:
            return None
        after = self.register.pop(name)
        if not self.register:
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)  # the finders after this one (it answers for `name` no more)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def run_then_register(module):
            exec_module(module)
            after(module)

        loader.exec_module = run_then_register
        return spec


# ---------------------------------------------------------------- JAX

_JAX_MAX_BYTES = 64 << 20


class _JaxLog:
    """The JSON lines of DIR/jax-PID.log, buffered; written at 32 KiB and at exit."""

    def __init__(self, directory, prefix="jax"):
        import json

        self.json = json
        self.buf = []
        self.size = 0
        self.written = 0
        self.pid = os.getpid()
        try:
            self.fd = os.open(os.path.join(directory, "%s-%d.log" % (prefix, self.pid)),
                              os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            self.fd = None

    def line(self, text):
        if self.fd is None:
            return
        if self.written + self.size + len(text) > _JAX_MAX_BYTES - 64:
            self.buf.append('{"k":"limit"}\n')
            self.flush()
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None
            return
        self.buf.append(text)
        self.size += len(text)
        if self.size >= 32768:
            self.flush()

    def record(self, **fields):
        self.line(self.json.dumps(fields, separators=(",", ":")) + "\n")

    def flush(self):
        if self.fd is None or not self.buf:
            return
        data = "".join(self.buf).encode("utf-8", "replace")
        self.buf = []
        self.size = 0
        self.written += len(data)
        try:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]
        except OSError:
            os.close(self.fd)
            self.fd = None

    def forked(self):
        # A child of fork() (a data loader's worker) records nothing: its buffer is the parent's.
        self.buf = []
        self.size = 0
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None


class _NotGiven:
    pass


_NOT_GIVEN = _NotGiven()


def _open_log(directory, prefix):
    """DIR/PREFIX-PID.log (_JaxLog), flushed at exit and reopened by a forked child; None when it cannot be made."""
    import atexit

    log = _JaxLog(directory, prefix)
    if log.fd is None:
        return None
    atexit.register(log.flush)
    try:
        os.register_at_fork(after_in_child=log.forked)
    except Exception:
        pass
    return log


def _wrap_reads(cls, methods, local, flag, log, now, program_frame, extra=dict):
    """Wraps each (name, kind, what) of `methods` on `cls` (a jax Array, a torch Tensor) so that a read by the
    program's own code is logged as a forced evaluation (k="eval", with extra()'s fields). program_frame(obj, depth)
    is the frame of the program that made the call (sys._getframe(depth) there is the wrapper's caller), or None
    for a call that is not logged. local.<flag> is set during a logged read: reads inside it are not logged."""

    def wrap(name, kind, what):
        original = getattr(cls, name, None)
        if original is None:
            return

        def forced(self, *args, **kwargs):
            frame = None if getattr(local, flag, False) else program_frame(self, 2)
            if frame is None:
                return original(self, *args, **kwargs)
            setattr(local, flag, True)
            t0 = now()
            try:
                return original(self, *args, **kwargs)
            finally:
                setattr(local, flag, False)
                log.record(k="eval", ts=t0, dur=now() - t0, kind=kind, what=what, file=frame.f_code.co_filename,
                           line=frame.f_lineno, fn=frame.f_code.co_name, **extra())

        try:
            setattr(cls, name, functools.wraps(original)(forced))
        except Exception:
            pass

    for name, kind, what in methods:
        wrap(name, kind, what)


def _register_jax(jax):
    directory = os.environ.get("TC_JAX_LOG_DIR")
    if not directory:
        return
    import logging
    import threading
    import time

    now = time.monotonic_ns  # CLOCK_MONOTONIC: the store's clock
    log = _open_log(directory, "jax")
    if log is None:
        return
    log.record(k="start", ts=now(), pid=log.pid, jax=str(getattr(jax, "__version__", "")))
    try:  # call sites in cache-miss explanations: the program's frame, not this hook's
        from jax._src import source_info_util

        source_info_util.register_exclusion(_HERE + os.sep)
    except Exception:
        pass
    local = threading.local()

    # Compile stages: jax.monitoring calls back as each stage ends.
    def on_duration(event, seconds, **kw):
        if isinstance(event, str) and event.startswith("/jax/core/compile/"):
            log.record(k="dur", ts=now(), event=event, s=float(seconds), fun=str(kw.get("fun_name", "")))

    try:
        jax.monitoring.register_event_duration_secs_listener(on_duration)
    except Exception:
        pass

    # Cache-miss explanations: a filter on the loggers that write them.
    try:
        quiet = not jax.config.jax_explain_cache_misses  # the user did not ask to see them

        class _Misses(logging.Filter):
            def filter(self, record):
                try:
                    msg = record.getMessage()
                except Exception:
                    return True
                if "CACHE MISS" not in msg:
                    return True
                log.record(k="miss", ts=now(), msg=msg)
                return not quiet

        for name in ("jax._src.interpreters.partial_eval", "jax._src.pjit", "jax._src.dispatch"):
            logging.getLogger(name).addFilter(_Misses())
        jax.config.update("jax_explain_cache_misses", True)
    except Exception:
        pass

    # Jitted calls: jax.jit returns a wrapper that records each outermost call.
    funs = []

    class _Jitted:
        def __init__(self, jitted, fun):
            self._tc_jitted = jitted
            self._tc_index = None
            self._tc_fun = fun
            try:
                functools.update_wrapper(self, fun)
            except Exception:
                pass

        def __call__(self, *args, **kwargs):
            if getattr(local, "depth", 0):
                return self._tc_jitted(*args, **kwargs)
            if self._tc_index is None:
                self._tc_index = len(funs)
                funs.append(self)
                code = getattr(self._tc_fun, "__code__", None)
                log.record(k="fun", i=self._tc_index, name=str(getattr(self._tc_fun, "__name__", "?")),
                           file=code.co_filename if code else "", line=code.co_firstlineno if code else 0)
            local.depth = 1
            t0 = now()
            try:
                return self._tc_jitted(*args, **kwargs)
            finally:
                local.depth = 0
                log.line('{"k":"call","f":%d,"ts":%d,"end":%d}\n' % (self._tc_index, t0, now()))

        def __get__(self, obj, objtype=None):
            return self if obj is None else functools.partial(self, obj)

        def __getattr__(self, name):
            return getattr(self.__dict__["_tc_jitted"], name)

    original_jit = jax.jit

    def jit(fun=_NOT_GIVEN, /, *args, **kwargs):
        if fun is _NOT_GIVEN:
            decorate = original_jit(*args, **kwargs)
            return lambda f: _Jitted(decorate(f), f)
        jitted = original_jit(fun, *args, **kwargs)
        return _Jitted(jitted, fun) if callable(fun) else jitted

    try:
        functools.update_wrapper(jit, original_jit)
        jax.jit = jit
    except Exception:
        pass

    # Forced evaluations: a jax Array read back on the host by the program's own code.
    jax_dir = os.path.dirname(os.path.abspath(jax.__file__)) + os.sep
    try:
        from jax._src import array as _array

        Array = _array.ArrayImpl
    except Exception:
        return

    def program_frame(_array, depth):
        frame = sys._getframe(depth)
        where = frame.f_code.co_filename
        return None if where.startswith(jax_dir) or where.startswith("<frozen") else frame

    _wrap_reads(Array, (("__float__", "item", "float()"), ("__int__", "item", "int()"), ("__bool__", "item", "bool()"),
                        ("item", "item", "item()"), ("tolist", "to_host", "tolist()"),
                        ("__array__", "to_host", "numpy.asarray()"), ("__repr__", "print", "repr()"),
                        ("__str__", "print", "str()"), ("__format__", "print", "format()")),
                local, "reading", log, now, program_frame)

# ---------------------------------------------------------------- PyTorch/XLA


def _register_xla(torch_xla):
    """Writes DIR/xla-PID.log (DIR = TC_XLA_LOG_DIR): each torch_xla.sync() (xm.mark_step()) as a step, each forced
    evaluation of an XLA tensor by the program's own code, each host-to-device .to() with its shape, and with each
    the compilations and executions PyTorch/XLA's metrics counted since the last record."""
    directory = os.environ.get("TC_XLA_LOG_DIR")
    if not directory:
        return
    import linecache
    import re
    import threading
    import time

    import torch

    try:
        from torch_xla import _XLAC

        xla_metric = _XLAC._xla_metric_data
        xla_counter = _XLAC._xla_counter_value
    except Exception:
        return
    now = time.monotonic_ns
    log = _open_log(directory, "xla")
    if log is None:
        return
    _XLA_STEPS.append(True)
    log.record(k="start", ts=now(), pid=log.pid, torch_xla=str(getattr(torch_xla, "__version__", "")),
               torch=str(getattr(torch, "__version__", "")))
    local = threading.local()
    last = [0, 0, 0, 0]  # UncachedCompile, CompileTime total ns, ExecuteTime count, ExecuteTime total ns

    def metric(name):
        m = xla_metric(name)
        return (int(m[0]), int(m[1])) if m else (0, 0)

    def since_last():
        try:
            c = int(xla_counter("UncachedCompile") or 0)
            ct = metric("CompileTime")[1]
            en, et = metric("ExecuteTime")
        except Exception:
            return {}
        d = dict(compiles=c - last[0], compile_ns=ct - last[1], executes=en - last[2], execute_ns=et - last[3])
        last[:] = [c, ct, en, et]
        return d

    since_last()
    skip = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, torch_xla)) + ("<frozen",)

    def caller(depth):
        frame = sys._getframe(depth)
        while frame is not None and frame.f_code.co_filename.startswith(skip):
            frame = frame.f_back
        return frame

    # Steps: each outermost sync (xm.mark_step() calls torch_xla.sync()).
    original_sync = torch_xla.sync

    def sync(*args, **kwargs):
        if getattr(local, "busy", False):
            return original_sync(*args, **kwargs)
        local.busy = True
        t0 = now()
        try:
            return original_sync(*args, **kwargs)
        finally:
            local.busy = False
            frame = caller(2)
            log.record(k="sync", ts=t0, end=now(), file=frame.f_code.co_filename if frame else "",
                       line=frame.f_lineno if frame else 0, **since_last())

    try:
        functools.update_wrapper(sync, original_sync)
        torch_xla.sync = sync
        import torch_xla.torch_xla as _module

        _module.sync = sync
    except Exception:
        pass

    # Forced evaluations: an XLA tensor read back on the host by the program's own code.
    Tensor = torch.Tensor

    def program_frame(tensor, depth):
        try:
            if tensor.device.type != "xla":
                return None
        except Exception:
            return None
        frame = caller(depth + 1)  # caller's own frame is one more
        return frame if frame is not None and frame is sys._getframe(depth) else None

    _wrap_reads(Tensor, (("item", "item", "item()"), ("tolist", "to_host", "tolist()"), ("__float__", "item", "float()"),
                         ("__int__", "item", "int()"), ("__bool__", "item", "bool()"), ("cpu", "to_host", "cpu()"),
                         ("numpy", "to_host", "numpy()"), ("__repr__", "print", "repr()"), ("__format__", "print", "format()")),
                local, "busy", log, now, program_frame, since_last)

    # Graph inputs: a host tensor moved to the XLA device by the program's own code, named by the variable it is
    # assigned to on that line (`token_ids = batch.to(device)`), else by its file:line.
    assigned = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=[^=]")
    original_to = Tensor.to

    def to(self, *args, **kwargs):
        out = original_to(self, *args, **kwargs)
        try:
            if out is self or out.device.type != "xla" or self.device.type == "xla":
                return out
            frame = sys._getframe(1)
            where = frame.f_code.co_filename
            if where.startswith(skip):
                return out
            m = assigned.match(linecache.getline(where, frame.f_lineno))
            log.record(k="input", ts=now(), name=m.group(1) if m else "%s:%d" % (os.path.basename(where), frame.f_lineno),
                       file=where, line=frame.f_lineno, shape=list(out.shape))
        except Exception:
            pass
        return out

    try:
        Tensor.to = functools.wraps(original_to)(to)
    except Exception:
        pass


def _install():
    register = {}
    for name, after in (("torch", _register), ("jax", _register_jax), ("torch_xla", _register_xla)):
        if name in sys.modules:
            after(sys.modules[name])
        else:
            register[name] = after
    if register:
        sys.meta_path.insert(0, _Watcher(register))


try:
    _install()
finally:
    _chain()
