"""tc's Python start-up hook: marks each training step of a PyTorch program.

tc-profile puts the directory of this file first on PYTHONPATH (unless
--no-python-hooks), so Python imports it at start-up as `sitecustomize`. It
leaves the program as it was (tests/collect/hook_transparency_test.cpp):
  - it takes its directory off sys.path again, and imports the sitecustomize
    it hid (the next one on sys.path) in its own place, so that
    `import sitecustomize` returns the program's own module (or fails, as it
    would without tc);
  - at start-up it imports nothing (it uses os and sys, which site imported)
    and leaves sys.meta_path alone: until the program imports torch, jax or
    torch_xla, PathFinder.find_spec is patched to see those imports. What it
    imports then (functools, json, threading, ...) the framework has imported;
  - once the program imports torch it registers torch's global optimizer step
    hook (torch.optim.optimizer.register_optimizer_step_post_hook) and marks
    each step() of the first optimizer that steps with an NVTX mark
    "tc.optimizer_step" (torch.cuda.nvtx.mark, which tc's NVTX capture records
    on any machine, GPU or not), and the moment torch was imported (and each
    fork() after it, in the child) with "tc.optimizer_steps_start". The
    collector turns the marks into the run's steps (tc/collect/collector.h:
    kStepMark).
Cost: one NVTX mark per step, a few microseconds (docs/frameworks.md).
Under tc-profile (TORCH_TRACE set) it also writes TORCH_TRACE/tc-torch-PID.jsonl:
each step's first call of what torch.compile returned (its arguments'
shapes) and the training's tensors at the step by role (_TorchMemory: the
optimizers' parameters, gradients and state, the activations autograd saved
for backward, found by walking the graph before torch.autograd.backward,
which it wraps).

For JAX (only once the program imports jax, and only when tc-profile set
TC_JAX_LOG_DIR) it writes DIR/jax-PID.log, JSON lines that the collector
imports at the end of the run (tc/import/import.h, import_jax_log):
  - the jax.monitoring durations of /jax/core/compile/* (tracing, lowering,
    backend compile), each with its fun_name;
  - the "TRACING CACHE MISS" explanations of jax_explain_cache_misses, which
    it turns on (their text as JAX wrote it; printed only if you turned the
    option on yourself);
  - each call of a jax.jit function of the program that is not inside
    another jitted function's call (the collector counts the calls of the
    one called most as the steps), seen through the __call__ of jaxlib's
    PjitFunction type: jax.jit is not wrapped;
  - float()/int()/bool()/item()/tolist()/numpy.asarray()/printing of a jax
    Array by the program's own code, with its file:line and how long it
    waited (a forced evaluation).
Each line is written as it is recorded (one os.write), so a program that
ends in os._exit() or by a signal keeps them. The file holds at most 64 MiB;
the collector trusts none of it.
"""
import os  # os and sys: site imported both before this file
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _hide():
    """Takes this hook's directory off sys.path, where PYTHONPATH put it: the program sees the path it would without tc."""
    for i, entry in enumerate(sys.path):
        if isinstance(entry, str) and entry and os.path.abspath(entry) == _HERE:
            del sys.path[i]
            sys.path_importer_cache.pop(entry, None)
            return


def _chain():
    """Imports the sitecustomize this one hides, in its place: `import sitecustomize` then returns the program's own
    module, or fails as it would without tc (site ignores an ImportError of that name). Run last: the import that is
    running this file returns whatever sys.modules holds for the name when it ends."""
    sys.modules.pop(__name__, None)
    __import__(__name__)


_XLA_STEPS = []  # not empty once the PyTorch/XLA hook counts steps by torch_xla.sync()
_TORCH_STEP_ENDS = []  # called at each step the hook marks (the torch.compile log's step records)
_TORCH_OPTIMIZERS = []  # [a WeakSet of every optimizer that stepped], once torch is imported (_TorchMemory)


def _register(torch):
    try:
        mark = torch.cuda.nvtx.mark
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except Exception:  # a torch without NVTX or without global step hooks: no steps
        return
    import weakref

    first = []
    optimizers = weakref.WeakSet()
    _TORCH_OPTIMIZERS.append(optimizers)

    def after_step(optimizer, args, kwargs):
        if _XLA_STEPS:  # PyTorch/XLA's steps are its syncs
            return
        try:
            optimizers.add(optimizer)
        except TypeError:
            pass
        if not first:
            first.append(id(optimizer))
        if first[0] == id(optimizer):
            mark("tc.optimizer_step")
            for step_ended in _TORCH_STEP_ENDS:
                try:
                    step_ended()
                except Exception:
                    pass

    def forked():  # a child of fork() (a multiprocessing worker): its own first step starts here
        first.clear()
        try:
            mark("tc.optimizer_steps_start")
        except Exception:
            pass

    try:
        mark("tc.optimizer_steps_start")
        register_optimizer_step_post_hook(after_step)
        os.register_at_fork(after_in_child=forked)
    except Exception:
        pass
    _register_ddp(torch)
    _register_torch_compile(torch)


_COLLECTIVE = "tc.collective.all_reduce"  # store::schema::kCollectiveAllReduce


def _register_ddp(torch):
    """Times each gradient all-reduce of DistributedDataParallel over gloo or NCCL: an NVTX start/end range named
    _COLLECTIVE from the moment this rank's bucket is ready (its arrival) to the moment the all-reduce completes
    (the last rank arrived and the sum came back), which the collector turns into collectives rows. Over NCCL
    the arrival is when this rank's host enqueues the all-reduce, and the future completes once the work is
    queued on the GPU, not done: the waits come from the arrivals (docs/frameworks.md, Jobs). It is a DDP
    communication hook doing what DDP does without one (default_hooks.allreduce_hook: divide by the group's size,
    all-reduce), registered as DDP's constructor ends, when DDP registered none; a hook registered later (by the
    program's register_comm_hook, a built-in one as its Python twin in default_hooks, or DDP's own before the first
    forward) replaces the all-reduce inside it. Nothing here runs inside a compiled region: DDP is constructed
    outside torch.compile, so dynamo never sees these frames (a wrapper of _lazy_init, which DDP's forward calls,
    was compiled as a frame of its own and broke the graph)."""
    try:
        import functools
        import weakref

        DDP = torch.nn.parallel.DistributedDataParallel
        init, register = DDP.__dict__["__init__"], DDP.__dict__["register_comm_hook"]
        builtin = DDP.__dict__["_register_builtin_comm_hook"]
        start, end = torch.cuda.nvtx.range_start, torch.cuda.nvtx.range_end
    except Exception:
        return
    inner = weakref.WeakKeyDictionary()  # a DDP module timed here -> (hook, state) of the all-reduce inside

    def timed(state, bucket):  # state: the DDP module's weak reference
        ddp = state()
        hook, hook_state = inner[ddp]
        at = start(_COLLECTIVE)
        try:
            fut = hook(hook_state, bucket)
        except BaseException:
            end(at)
            raise

        def done(f):
            end(at)
            return f.value()

        return fut.then(done)

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            import torch.distributed as dist
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

            if (self._comm_hooks or getattr(self, "reducer", None) is None or getattr(self, "_use_python_reducer", False)
                    or dist.get_backend(self.process_group) not in ("gloo", "nccl")):
                return
            inner[self] = (allreduce_hook, self.process_group)
            dist._register_comm_hook(self.reducer, weakref.ref(self), timed)  # raises if a built-in hook is set
        except Exception:
            inner.pop(self, None)

    def register_comm_hook(self, state, hook):
        if self not in inner:
            return register(self, state, hook)
        self._check_comm_hook(hook)
        if self.logger is not None:
            self.logger._set_comm_hook_name(hook.__qualname__)
        self._comm_hooks.append((hook, state))
        inner[self] = (hook, state)

    def _register_builtin_comm_hook(self, comm_hook_type):
        if self not in inner:
            return builtin(self, comm_hook_type)
        import torch.distributed as dist
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        twins = {dist.BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
                 dist.BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
        if comm_hook_type not in twins:
            return builtin(self, comm_hook_type)  # DDP refuses it, as it would refuse any second hook
        if self.logger is not None:
            self.logger._set_comm_hook_name(str(comm_hook_type))
        inner[self] = (twins[comm_hook_type], self.process_group)

    try:
        register_comm_hook.__wrapped__ = register
        register_comm_hook.__doc__ = register.__doc__
        _register_builtin_comm_hook.__wrapped__ = builtin
        DDP.__init__ = functools.wraps(init)(__init__)
        DDP.register_comm_hook = register_comm_hook
        DDP._register_builtin_comm_hook = _register_builtin_comm_hook
    except Exception:
        pass


def _watch(register):
    """Calls after(module) once the program imports one of `register` (name -> after), from the path finder's spec
    of the module: PathFinder.find_spec is patched until the last of them is imported, and the module's loader only
    for that import. sys.meta_path stays as it was; a module found by another finder is not seen."""
    finder = next((f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder"), None)
    original = getattr(finder, "__dict__", {}).get("find_spec")
    if not isinstance(original, classmethod):
        return
    find = original.__get__(None, finder)

    def find_spec(cls, name, path=None, target=None):
        spec = find(name, path, target)
        if name not in register or spec is None or getattr(spec.loader, "exec_module", None) is None:
            return spec
        after = register.pop(name)
        if not register:
            setattr(finder, "find_spec", original)
        loader = spec.loader
        exec_module = loader.exec_module

        def run_then_register(module):
            try:
                del loader.exec_module  # the loader as it was
            except AttributeError:
                pass
            exec_module(module)
            after(module)

        try:
            loader.exec_module = run_then_register
        except Exception:  # a loader that takes no attribute: this module goes unseen
            pass
        return spec

    finder.find_spec = classmethod(find_spec)


# ---------------------------------------------------------------- torch.compile


def _register_torch_compile(torch):
    """Writes TORCH_TRACE/tc-torch-PID.jsonl when TORCH_TRACE is set (tc-profile collects torch.compile's trace): a
    "start" record, then one "step" record at each step the hook marks, with the time of the step's first call of
    what torch.compile returned ("call") made with autograd on (a training call, not an evaluation's) and, when they
    differ from the record before, the shapes of that call's arguments named as torch names the compiled frame's
    inputs ("in"; _compiled_params, _call_names, _arg_shapes). torch.compile is replaced by a function that calls it and wraps
    what it returns: a module's forward (the OptimizedModule keeps its type; pickling drops the wrapper), a function
    in a function (functools.wraps). A call made while torch compiles is passed through."""
    directory = os.environ.get("TORCH_TRACE")
    original = getattr(torch, "compile", None)
    if not directory or not callable(original):
        return
    import functools
    import time

    now = time.monotonic_ns  # CLOCK_MONOTONIC: the store's clock
    log = _open_log(directory, "tc-torch", ".jsonl")
    if log is None:
        return
    log.record(k="start", ts=now(), pid=log.pid, torch=str(getattr(torch, "__version__", "")))
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
    step = {"call": None, "in": None, "last": None, "mem": None}  # this step's first call and its shapes, the shapes
    # and the memory written last
    memory = _TorchMemory(torch)

    def out_of_memory(e):
        """A "oom" record when `e` is torch's out-of-memory error (at most 16: a program may catch them and retry)."""
        try:
            requested = _oom_bytes(torch, e)
            if requested is None or memory.ooms >= 16:
                return
            memory.ooms += 1
            fields = {"ts": now(), "requested": requested, "batch": memory.batch}
            if memory.last is not None:
                fields["mem"] = memory.last
            log.record(k="oom", **fields)
        except Exception:
            pass

    def step_ended():
        call, shapes = step["call"], step["in"]
        step["call"] = None
        fields = {}
        try:
            mem = memory.step_ended(memory.batch if call is not None else 0)  # the batch its compiled call set
        except Exception:
            mem = None
        if mem is not None and mem != step["mem"]:
            step["mem"] = fields["mem"] = mem
        if call is not None:
            fields["call"] = call
            if shapes != step["last"]:
                step["last"] = shapes
                fields["in"] = {n: list(v) for n, v in shapes}
        if not fields:
            log.line('{"k":"step","end":%d}\n' % now())
        elif len(fields) == 1 and call is not None:
            log.line('{"k":"step","end":%d,"call":%d}\n' % (now(), call))
        else:
            log.record(k="step", end=now(), **fields)

    def wrap(fn, names):
        @functools.wraps(fn)
        def compiled_call(*args, **kwargs):
            if not compiling() and step["call"] is None and torch.is_grad_enabled():
                step["call"] = now()
                try:
                    named, keywords = _call_names(names, args, kwargs)
                    step["in"] = _arg_shapes(named, args, keywords)
                except Exception:
                    step["in"] = ()
                memory.batch = _batch_of(step["in"])
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                out_of_memory(e)
                raise

        if hasattr(fn, "__wrapped__"):  # what torch's own wrapper unwraps to: the program's function
            compiled_call.__wrapped__ = fn.__wrapped__
        return compiled_call

    @functools.wraps(original)
    def compile(model=None, *args, **kwargs):
        compiled = original(model, *args, **kwargs)
        if model is None:  # the decorator form: it calls torch.compile again with the function
            return compiled
        try:
            names = _compiled_params(torch, model)
            if not isinstance(compiled, torch.nn.Module):
                return wrap(compiled, names)
            if callable(compiled.__dict__.get("forward")):
                compiled.__dict__["forward"] = wrap(compiled.__dict__["forward"], names)
        except Exception:
            pass
        return compiled

    torch.compile = compile
    _TORCH_STEP_ENDS.append(step_ended)
    backward = getattr(torch.autograd, "backward", None)
    if callable(backward):
        @functools.wraps(backward)
        def backward_walked(tensors, *args, **kwargs):
            try:
                memory.before_backward(tensors)
            except Exception:
                pass
            try:
                return backward(tensors, *args, **kwargs)
            except Exception as e:
                out_of_memory(e)
                raise

        torch.autograd.backward = backward_walked


def _oom_bytes(torch, e):
    """The bytes of the allocation that failed when `e` is torch's out-of-memory error (0 when its text does not say),
    else None: torch.OutOfMemoryError (a GPU's), or the CPU allocator's RuntimeError "can't allocate memory"."""
    kind = getattr(torch, "OutOfMemoryError", None)
    text = str(e)[:4000]
    if not ((kind is not None and isinstance(e, kind)) or (isinstance(e, RuntimeError) and "can't allocate memory" in text)):
        return None
    import re

    m = re.search(r"allocate ([0-9]+) bytes", text)
    if m:
        return int(m.group(1))
    m = re.search(r"[Tt]ried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)", text)
    if m:
        return int(float(m.group(1)) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m.group(2)])
    return 0


def _batch_of(shapes):
    """The batch of a compiled call's argument shapes (_arg_shapes): the dim 0 that the most arguments share (the
    first such when tied), 0 when no argument has a dim."""
    counts = {}
    for _, dims in shapes or ():
        if len(dims) > 0 and int(dims[0]) > 0:
            counts[int(dims[0])] = counts.get(int(dims[0]), 0) + 1
    best = 0
    for b, n in counts.items():
        if n > counts.get(best, 0):
            best = b
    return best


def _storage(torch, t):
    """(key, bytes) of tensor t's storage, the key (device type, device index, address) the same for every view of
    it; (None, 0) for what is not a tensor with a storage it can give."""
    if not isinstance(t, torch.Tensor):
        return None, 0
    try:
        st = t.untyped_storage()
        return (st.device.type, st.device.index, st.data_ptr()), st.nbytes()
    except Exception:
        return None, 0


class _TorchMemory:
    """The training's tensors at each step the hook marks, by role, for tc's memory findings (issue #30): torch 2.15
    keeps no statistics of its CPU allocator, and saved-tensor hooks would break torch.func, so
      - parameters, gradients and optimizer state are the tensors of every optimizer that stepped (their param_groups'
        parameters and .grad, their state), each storage counted once, at the end of the step (the optimizer's step
        post hook: the gradients are still there). Read on the first 3 steps and every 50th (they do not change with
        the batch);
      - activations are what autograd saved for backward: before a backward (torch.autograd.backward, which
        Tensor.backward calls) the graph is walked from its roots and the storages its nodes saved (their raw saved
        variables, _raw_saved_*: a custom Function's _raw_saved_tensors, as torch.compile's compiled graphs save
        theirs) are summed, leaves' storages (the parameters) left out. A saved variable with an unpack hook
        (activation checkpointing, offloading) is neither read nor counted: unpacking it would run the forward again
        or copy it back. The first 3 backward calls at each batch are walked (about 0.2-0.5 ms
        each for a 2-layer Transformer's graph); later steps at that batch take the largest walked;
      - the batch is the step's first compiled call's: the dim 0 most of its arguments share (0: none, or no
        compiled call);
      - on a GPU, torch.cuda's own peak allocated and reserved bytes of the step (then reset), and the device's
        memory as capacity. Not verified on a GPU.
    The step record gets "mem": {"param", "grad", "opt", "act", "batch", "cap", "cap_src"[, "cuda": [allocated,
    reserved]]} when it differs from the last one written. torch's out-of-memory error raised through a compiled
    call or a backward is a record of its own ("oom": the bytes asked for, the batch, the last step's "mem")."""

    _WALKS = 3
    _MAX_NODES = 200000

    def __init__(self, torch):
        self.torch = torch
        self.names = {}  # autograd node type -> the names of its saved-tensor attributes
        self.act = {}  # batch -> [walks, largest saved bytes]
        self.batch = 0  # the batch of the step being run (its first compiled call's; the step before's until then)
        self.steps = 0
        self.fixed = None  # (param, grad, opt) last read
        self.capacity = None
        self.last = None  # the last step's "mem"
        self.ooms = 0
        snapshot = os.environ.get("TC_TORCH_MEMORY_SNAPSHOT")
        if snapshot:
            self._record_snapshot(snapshot)

    def _record_snapshot(self, path):
        """TC_TORCH_MEMORY_SNAPSHOT=FILE: torch.cuda's allocator history from torch's import on, written to FILE at
        exit (torch.cuda.memory._dump_snapshot: pytorch.org/memory_viz reads it); nothing without CUDA. Not verified
        on a GPU."""
        torch = self.torch
        try:
            if not torch.cuda.is_available():
                return
            torch.cuda.memory._record_memory_history(max_entries=100000)
        except Exception:
            return
        import atexit

        def dump():
            try:
                torch.cuda.memory._dump_snapshot(path)
            except Exception:
                pass

        atexit.register(dump)

    def before_backward(self, tensors):
        entry = self.act.setdefault(self.batch, [0, -1])
        if entry[0] >= self._WALKS:
            return
        entry[0] += 1
        entry[1] = max(entry[1], self._saved_bytes(tensors))

    def _saved_bytes(self, tensors):
        torch = self.torch
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors) if isinstance(tensors, (list, tuple)) else []
        stack = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        visited, seen, storages, leaves = [], set(), {}, set()
        while stack and len(visited) < self._MAX_NODES:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            visited.append(node)  # kept while walking: an id is not reused
            kind = type(node)
            names = self.names.get(kind)
            if names is None:  # the raw saved variables (a custom Function's: _raw_saved_tensors)
                names = self.names[kind] = tuple(a for a in dir(node) if a.startswith("_raw_saved_"))
            values = []
            for name in names:
                try:
                    raw = getattr(node, name)
                except Exception:  # freed
                    continue
                for r in raw if isinstance(raw, (list, tuple)) else (raw,):
                    try:
                        # One with an unpack hook (activation checkpointing, offloading) is not read: unpacking it
                        # would run the hook (recompute the forward, copy back); it is not counted.
                        if r.unpack_hook is None:
                            values.append(r.data)
                    except Exception:
                        pass
            leaf = getattr(node, "variable", None)  # AccumulateGrad: a leaf tensor (a parameter)
            if isinstance(leaf, torch.Tensor):
                values.append(leaf)
            for t in values:
                key, nbytes = _storage(torch, t)
                if key is None:
                    continue
                if t is leaf:
                    leaves.add(key)
                else:
                    storages[key] = nbytes
            for nxt, _ in getattr(node, "next_functions", ()):
                if nxt is not None:
                    stack.append(nxt)
        return sum(n for key, n in storages.items() if key not in leaves)

    def _fixed(self):
        torch = self.torch
        seen = set()
        sums = [0, 0, 0]
        device = None

        def add(role, t):
            nonlocal device
            key, nbytes = _storage(torch, t)
            if key is not None and key not in seen:
                seen.add(key)
                sums[role] += nbytes
                if device is None and key[0] == "cuda":
                    device = t.device
        for optimizers in _TORCH_OPTIMIZERS:
            for opt in list(optimizers):
                for group in opt.param_groups:
                    for p in group["params"]:
                        add(0, p)
                        add(1, p.grad)
                for state in opt.state.values():
                    for v in state.values() if isinstance(state, dict) else ():
                        add(2, v)
        return tuple(sums), device

    def step_ended(self, batch):
        """The "mem" of the step that ended (its compiled call's batch, 0 if none), or None when no optimizer has
        tensors."""
        torch = self.torch
        self.steps += 1
        if self.fixed is None or self.steps <= 3 or self.steps % 50 == 0:
            self.fixed = self._fixed()
        (param, grad, opt), device = self.fixed
        if param <= 0:
            return None
        walked = self.act.get(batch)
        mem = {"param": param, "grad": grad, "opt": opt, "act": walked[1] if walked and walked[1] >= 0 else 0,
               "batch": batch}
        if self.capacity is None:
            self.capacity = (0, "")
            try:
                if device is not None:
                    self.capacity = (int(torch.cuda.get_device_properties(device).total_memory), "cuda")
            except Exception:
                pass
            if self.capacity[0] <= 0:
                self.capacity = _capacity_bytes()
        mem["cap"], mem["cap_src"] = self.capacity
        if device is not None:
            try:
                mem["cuda"] = [int(torch.cuda.max_memory_allocated(device)), int(torch.cuda.max_memory_reserved(device))]
                torch.cuda.reset_peak_memory_stats(device)
            except Exception:
                pass
        self.last = mem
        return mem


def _compiled_params(torch, model):
    """(positional names, all named parameters, *name, **name) of the frame torch.compile compiles: a module's forward
    as its instance has it (a decorator's wrapper(*args, **kwargs) included: that is the frame torch names inputs by;
    Module.compile() passes its bound _call_impl), a function's; a bound method's positional names without self."""
    try:  # a torch.nn module of torch's own: torch compiles an inline function(*args, **kwargs) that calls it
        if isinstance(model, torch.nn.Module) and torch._dynamo.eval_frame.OptimizedModule._forward_has_skip_rule(model):
            return (), (), "args", "kwargs"
    except Exception:
        pass
    f = model.forward if isinstance(model, torch.nn.Module) else model
    owner = getattr(f, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(f, "__name__", "") == "_call_impl":
        f = owner.forward
    code = getattr(getattr(f, "__func__", f), "__code__", None)
    if code is None:
        return (), (), None, None
    n, k = code.co_argcount, code.co_kwonlyargcount
    varargs = code.co_varnames[n + k] if code.co_flags & 0x04 else None  # CO_VARARGS
    varkw = code.co_varnames[n + k + (varargs is not None)] if code.co_flags & 0x08 else None  # CO_VARKEYWORDS
    bound = getattr(f, "__self__", None) is not None
    return code.co_varnames[bound:n], code.co_varnames[:n + k], varargs, varkw


def _call_names(params, args, kwargs):
    """(names, kwargs) for _arg_shapes, named as torch names a compiled frame's inputs: the positional parameters,
    then *args' items as args[0] ..., and keyword arguments by their parameter, else as kwargs['name']."""
    positional, named, varargs, varkw = params
    names = tuple(positional) + tuple("%s[%d]" % (varargs or "args", j) for j in range(len(args) - len(positional)))
    return names, {(k if k in named or not varkw else "%s[%r]" % (varkw, k)): v for k, v in kwargs.items()}


# ---------------------------------------------------------------- JAX

_JAX_MAX_BYTES = 64 << 20


class _JaxLog:
    """The JSON lines of DIR/PREFIX-PID.log, each written by one os.write to an O_APPEND descriptor as it is
    recorded: a program that ends in os._exit() or is killed keeps every line before it."""

    def __init__(self, directory, prefix="jax", suffix=".log"):
        import json

        self.json = json
        self.written = 0
        self.pid = os.getpid()
        try:
            self.fd = os.open(os.path.join(directory, "%s-%d%s" % (prefix, self.pid, suffix)),
                              os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_APPEND, 0o600)
        except OSError:
            self.fd = None

    def line(self, text):
        if self.fd is None:
            return
        data = text.encode("utf-8", "replace")
        last = self.written + len(data) > _JAX_MAX_BYTES - 64  # then the limit line ends the file
        if last:
            data = b'{"k":"limit"}\n'
        self.written += len(data)
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            last = True
        if last:
            self.close()

    def record(self, **fields):
        self.line(self.json.dumps(fields, separators=(",", ":")) + "\n")

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None

    def forked(self):
        # A child of fork() (a data loader's worker) records nothing: the file is the parent's.
        self.close()


def _open_log(directory, prefix, suffix=".log"):
    """DIR/PREFIX-PID.log (_JaxLog), closed in a forked child; None when it cannot be made."""
    log = _JaxLog(directory, prefix, suffix)
    if log.fd is None:
        return None
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
    import functools

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


def _identity(x):
    return x


def _batch_items(name, value, key_type=object):
    """[(name, value)] of a value, or of a batch one level down: a dict's items whose key is a key_type, as
    batch['x'], a list's or tuple's as batch[0]. At most 64."""
    if isinstance(value, dict):
        return [("%s[%r]" % (name, k), v) for k, v in list(value.items())[:64] if isinstance(k, key_type)]
    if isinstance(value, (list, tuple)):
        return [("%s[%d]" % (name, i), v) for i, v in enumerate(value[:64])]
    return [(name, value)]


def _arg_shapes(names, args, kwargs):
    """((name, shape), ...) of a call's arguments that have a shape (arrays), by the function's parameter names; a
    dict, list or tuple argument (a batch) one level down, as batch['x'] or batch[0]. At most 64."""
    out = []

    def take(name, v):
        shape = getattr(v, "shape", None)
        if isinstance(shape, tuple) and len(out) < 64:  # torch.Size is a tuple
            out.append((name, shape))

    for i, v in enumerate(args):
        for item in _batch_items(names[i] if i < len(names) else "args[%d]" % i, v):
            take(*item)
    for k, v in kwargs.items():
        take(k, v)
    return tuple(out)


def _jit_calls(call, own, local, log, now, memory=None):
    """A __call__ for jaxlib's PjitFunction around its own (`call`): logs each jitted function of the program (its
    code outside `own`, the jax and jaxlib directories) at its first call (k="fun") and each outermost call of one
    (k="call", with its arguments' shapes, "in", when they differ from its call before); calls made inside another
    (its tracing) and jax's own functions are passed through."""
    import functools
    import weakref

    known = {}  # id(function) -> (weak reference, its index in the log or -1), dropped with the function
    count = [0]  # the program's functions logged
    params = {}  # index -> its parameter names
    last_in = {}  # index -> the shapes of its call before

    def index_of(jitted):
        fun = getattr(jitted, "_fun", None)
        code = getattr(fun, "__code__", None)
        where = code.co_filename if code else ""
        i = -1
        if not where.startswith(own):
            i = count[0]
            count[0] += 1
            log.record(k="fun", i=i, name=str(getattr(fun, "__name__", "?")), file=where,
                       line=code.co_firstlineno if code else 0)
            params[i] = code.co_varnames[:code.co_argcount] if code else ()
        key = id(jitted)
        try:
            known[key] = (weakref.ref(jitted, lambda _, key=key: known.pop(key, None)), i)
        except TypeError:
            known[key] = (None, i)
        return i

    def __call__(self, *args, **kwargs):
        if getattr(local, "depth", 0):
            return call(self, *args, **kwargs)
        entry = known.get(id(self))
        i = index_of(self) if entry is None else entry[1]
        if i < 0:
            return call(self, *args, **kwargs)
        try:
            shapes = _arg_shapes(params.get(i, ()), args, kwargs)
        except Exception:
            shapes = ()
        seen = memory.before(i, shapes, args, kwargs) if memory is not None else None
        local.depth = 1
        t0 = now()
        out = None
        try:
            out = call(self, *args, **kwargs)
            return out
        except Exception as e:
            if memory is not None:
                memory.out_of_memory(i, e, args, kwargs)
            raise
        finally:
            local.depth = 0
            if seen is not None:
                memory.after(self, i, seen, out)
            if shapes == last_in.get(i):
                log.line('{"k":"call","f":%d,"ts":%d,"end":%d}\n' % (i, t0, now()))
            else:
                last_in[i] = shapes
                log.record(k="call", f=i, ts=t0, end=now(), **{"in": {n: list(v) for n, v in shapes}})

    return functools.wraps(call)(__call__)


def _patch_call(cls, call):
    """cls.__call__ = call, reached by every call of an instance. Python 3.12 and later then stop calling instances
    through the type's vectorcall; 3.11 does not, so there the type's Py_TPFLAGS_HAVE_VECTORCALL bit is cleared in
    its tp_flags (found at its offset in CPython's PyTypeObject and checked against cls.__flags__ first). The type
    is left as it was when that cannot be done: then no calls are seen."""
    vectorcall = 1 << 11
    original = cls.__dict__["__call__"]
    cls.__call__ = call
    if sys.version_info >= (3, 12) or not cls.__flags__ & vectorcall:
        return True
    try:
        import ctypes

        at = 21 + (2 if hasattr(sys, "gettotalrefcount") else 0)  # tp_flags' word: after the object header and 18 slots
        words = (ctypes.c_ulong * (at + 1)).from_address(id(cls))
        if sys.version_info[:2] == (3, 11) and ctypes.sizeof(ctypes.c_ulong) == 8 and words[at] == cls.__flags__:
            words[at] &= ~vectorcall
            ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
            return True
    except Exception:
        pass
    cls.__call__ = original
    return False


def _register_jax(jax):
    directory = os.environ.get("TC_JAX_LOG_DIR")
    if not directory:
        return
    import functools
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
        if getattr(local, "probing", False):  # the memory probe's own compiles (_JaxMemory) are not the program's
            return
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
                if getattr(local, "probing", False):
                    return not quiet
                log.record(k="miss", ts=now(), msg=msg)
                return not quiet

        for name in ("jax._src.interpreters.partial_eval", "jax._src.pjit", "jax._src.dispatch"):
            logging.getLogger(name).addFilter(_Misses())
        jax.config.update("jax_explain_cache_misses", True)
    except Exception:
        pass

    # Jitted calls: the type of what jax.jit returns (jaxlib's PjitFunction, jnp's functions too) calls back here
    # for every call, and the outermost calls of the program's own functions are recorded. jax.jit and what it
    # returns stay as they are: their types, attributes and errors.
    jax_dir = os.path.dirname(os.path.abspath(jax.__file__)) + os.sep
    own = (jax_dir,) + tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                             for m in (sys.modules.get("jaxlib"),) if getattr(m, "__file__", None))
    try:
        from jax._src import traceback_util

        traceback_util.register_exclusion(_HERE + os.sep)  # JAX's filtered tracebacks leave this hook out
        Pjit = type(jax.jit(_identity))
    except Exception:
        Pjit = None
    if Pjit is not None and Pjit.__module__.startswith("jaxlib") and "__call__" in Pjit.__dict__:
        _patch_call(Pjit, _jit_calls(Pjit.__dict__["__call__"], own, local, log, now, _JaxMemory(jax, log, local, now)))

    # Forced evaluations: a jax Array read back on the host by the program's own code.
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

# ---------------------------------------------------------------- JAX memory

_PROBE_FACTORS = (2, 8)  # the step compiled ahead of time at these multiples of its batch (8x: the most suggested)


def _capacity_bytes():
    """(bytes, source) of memory the process may use on the CPU: its cgroup's limit (v2, else v1), else the machine's
    RAM; (0, "") when neither can be read."""
    paths = []
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.strip().split(":", 2)
                if len(parts) == 3 and parts[0] == "0":
                    paths.append("/sys/fs/cgroup" + parts[2].rstrip("/") + "/memory.max")
    except OSError:
        pass
    paths += ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    for path in paths:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < (1 << 60):  # "max" or v1's huge number: no limit
            return int(text), "cgroup"
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "ram"
    except (ValueError, OSError, AttributeError):
        return 0, ""


class _JaxMemory:
    """XLA's own memory accounting of the program's jitted functions, for tc's memory findings (issue #30):
      - the first call of each function with new argument shapes logs its executable's memory_analysis() (k="mem",
        ran=1): jitted.lower(...).compile() of the same abstract arguments after the call, which JAX's caches answer
        without compiling again (a few hundred microseconds);
      - at the end of the run (atexit), the step function (the one called most), at its most frequent shapes, is
        logged again (k="mem", ran=1, model=1), then lowered and compiled ahead of time with its batch (dim 0 of the
        batch arguments) at 2x and 8x, and each compile's memory_analysis() logged (k="mem", ran=0, model=1):
        compiles, never runs, within TC_MEMORY_PROBE_S seconds (30 by default; 0: none). The first probe always
        starts; the next only when the time spent plus the last probe's fits in the budget (k="mem_skipped" else);
      - the capacity (k="capacity"): the device's bytes_limit where memory_stats() has one (a GPU), else the cgroup's
        limit or the RAM;
      - XLA's RESOURCE_EXHAUSTED raised by a call of the program's jitted function (k="oom": the bytes, the batch),
        re-raised unchanged.
    The batch arguments: the arguments (top level, a dict or tuple counts as one) whose arrays all share one dim 0
    and that the function does not return (params and optimizer state come back; the batch does not); of those, the
    dim 0 shared by the most arguments, then by the most elements. The hook's own lowering is not logged as the
    program's (local.probing)."""

    def __init__(self, jax, log, local, now):
        self.jax, self.log, self.local, self.now = jax, log, local, now
        self.sigs = {}  # function index -> {shapes: [abstract (args, kwargs), calls, batch, batch positions]}
        self.calls = {}  # function index -> its calls
        self.jitted = {}  # function index -> a weak reference to it
        self.started = self.exiting = False
        self.ooms = 0
        self.oom_seen = set()  # ids of the errors logged
        self.last_call = None  # (function index, shapes) of the last call

    def out_of_memory(self, i, e, args, kwargs):
        """A k="oom" record when `e` is XLA's RESOURCE_EXHAUSTED from a call of function i (at most 16: a program may
        catch them and retry): the bytes its text says (0: none), the call's batch (dim 0 of its arguments where the
        function's most frequent shapes had their batch; 0 when not known). JAX dispatches asynchronously, so the
        error of a step often surfaces later, where the program reads a result: uncaught, it is found at exit
        (uncaught_out_of_memory), attributed to the last call."""
        try:
            text = str(e)[:4000]
            if "RESOURCE_EXHAUSTED" not in text or self.ooms >= 16 or id(e) in self.oom_seen:
                return
            self.ooms += 1
            self.oom_seen.add(id(e))
            import re

            m = re.search(r"allocating ([0-9]+) bytes", text)
            batch = 0
            known = [entry for entry in (self.sigs.get(i) or {}).values() if entry[3]]
            if known:
                values = list(args) + list(kwargs.values())
                for pos in max(known, key=lambda entry: entry[1])[3]:
                    for a in self.jax.tree_util.tree_leaves(values[pos]) if pos < len(values) else ():
                        shape = getattr(a, "shape", None)
                        if type(shape) is tuple and len(shape) >= 1:
                            batch = int(shape[0])
                            break
                    if batch:
                        break
            self.log.record(k="oom", f=i, ts=self.now(), requested=int(m.group(1)) if m else 0, batch=batch)
        except Exception:
            pass

    def uncaught_out_of_memory(self):
        """At exit: the exception that ended the program (sys.last_exc, or sys.last_value before Python 3.12), when it
        is a RESOURCE_EXHAUSTED not logged yet, as the last jitted call's, with that call's abstract arguments."""
        e = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if e is None or self.last_call is None:
            return
        i, shapes = self.last_call
        entry = (self.sigs.get(i) or {}).get(shapes)
        args, kwargs = entry[0] if entry is not None else ((), {})
        self.out_of_memory(i, e, args, kwargs)

    def before(self, i, shapes, args, kwargs):
        """Counts the call; for new shapes of function i, returns the abstract arguments (taken before the call: a
        donated argument is gone after it), else None."""
        self.calls[i] = self.calls.get(i, 0) + 1
        self.last_call = (i, shapes)
        sigs = self.sigs.setdefault(i, {})
        entry = sigs.get(shapes)
        if entry is not None:
            entry[1] += 1
            return None
        if len(sigs) >= 64 or self.exiting:
            return None
        try:
            abstract = self._abstract((args, kwargs))
        except Exception:
            return None
        entry = sigs[shapes] = [abstract, 1, 0, ()]
        return entry

    def after(self, jitted, i, entry, out):
        if out is None:
            return
        import weakref

        if i not in self.jitted:
            try:
                self.jitted[i] = weakref.ref(jitted)
            except TypeError:
                return
            if not self.started:  # once: the capacity, and the probes at exit (registered after JAX's exit handlers: run first)
                self.started = True
                self._capacity()
                import atexit

                atexit.register(self.probe)
        try:
            entry[2], entry[3] = self._batch(entry[0], out)
        except Exception:
            entry[2], entry[3] = 0, ()
        self._analyse(jitted, i, entry[0], entry[2], True)

    def _abstract(self, tree):
        jax = self.jax

        def leaf(a):
            if isinstance(a, jax.Array):
                sharding = a.sharding if getattr(a, "_committed", False) else None
                return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
            shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
            if type(shape) is tuple and dtype is not None:  # numpy
                return jax.ShapeDtypeStruct(shape, dtype)
            return a

        return jax.tree_util.tree_map(leaf, tree)

    def _batch(self, abstract, out):
        """(batch size, positions of the batch arguments) of a call, (0, ()) when none is found."""
        leaves = self.jax.tree_util.tree_leaves
        sds = self.jax.ShapeDtypeStruct
        returned = {(tuple(a.shape), str(a.dtype)) for a in leaves(out) if hasattr(a, "shape") and hasattr(a, "dtype")}
        args, kwargs = abstract
        groups = {}  # dim 0 -> [arguments, elements, positions]
        for pos, value in enumerate(list(args) + list(kwargs.values())):
            arrays = [a for a in leaves(value) if isinstance(a, sds) and len(a.shape) >= 1]
            dims = {a.shape[0] for a in arrays}
            if len(dims) != 1 or all((tuple(a.shape), str(a.dtype)) in returned for a in arrays):
                continue
            g = groups.setdefault(dims.pop(), [0, 0, []])
            g[0] += 1
            for a in arrays:
                n = 1
                for d in a.shape:
                    n *= d
                g[1] += n
            g[2].append(pos)
        if not groups:
            return 0, ()
        batch, g = max(groups.items(), key=lambda kv: (kv[1][0], kv[1][1]))
        return (batch, tuple(g[2])) if batch > 0 else (0, ())

    def _scaled(self, abstract, positions, batch, to):
        jax = self.jax
        args, kwargs = abstract

        def scale(a):
            if isinstance(a, jax.ShapeDtypeStruct) and len(a.shape) >= 1 and a.shape[0] == batch:
                return jax.ShapeDtypeStruct((to,) + tuple(a.shape[1:]), a.dtype, sharding=a.sharding)
            return a

        args = [jax.tree_util.tree_map(scale, v) if p in positions else v for p, v in enumerate(args)]
        kwargs = {k: (jax.tree_util.tree_map(scale, v) if len(args) + n in positions else v) for n, (k, v) in enumerate(kwargs.items())}
        return args, kwargs

    def _analyse(self, jitted, i, abstract, batch, ran, model=False):
        """Logs memory_analysis() of jitted lowered and compiled for `abstract`; the seconds it took, or None."""
        args, kwargs = abstract
        self.local.probing = True
        t0 = self.now()
        try:
            m = jitted.lower(*args, **kwargs).compile().memory_analysis()
        except Exception as e:  # a backend without the analysis, arguments lower() refuses: no record
            if not ran:
                self.log.record(k="mem_failed", f=i, batch=batch, why=str(e)[:200])
            return None
        finally:
            self.local.probing = False
        s = (self.now() - t0) / 1e9
        if m is None:
            return s
        fields = {}
        for key, name in (("arg", "argument_size_in_bytes"), ("out", "output_size_in_bytes"), ("temp", "temp_size_in_bytes"),
                          ("alias", "alias_size_in_bytes"), ("code", "generated_code_size_in_bytes")):
            fields[key] = int(getattr(m, name, 0) or 0)
        if model:
            fields["model"] = 1
        self.log.record(k="mem", f=i, ts=t0, batch=batch, ran=1 if ran else 0, s=round(s, 6), **fields)
        return s

    def _capacity(self):
        try:
            stats = self.jax.devices()[0].memory_stats() or {}
        except Exception:
            stats = {}
        if stats.get("bytes_limit"):  # a GPU (or TPU): the allocator's own limit; not verified on a GPU
            self.log.record(k="capacity", bytes=int(stats["bytes_limit"]), source="device")
            return
        cap, source = _capacity_bytes()
        if cap > 0:
            self.log.record(k="capacity", bytes=cap, source=source)

    def probe(self):
        """At exit: an uncaught RESOURCE_EXHAUSTED; the step function at 2x and 8x its batch, within the budget."""
        self.exiting = True
        self.uncaught_out_of_memory()
        try:
            budget = float(os.environ.get("TC_MEMORY_PROBE_S", "30"))
        except ValueError:
            budget = 30.0
        fs = [i for i in self.calls if i >= 0 and i in self.jitted]
        if budget <= 0 or not fs:
            return
        i = max(fs, key=lambda f: self.calls[f])
        jitted = self.jitted[i]()
        sigs = [e for e in self.sigs.get(i, {}).values() if e[2] > 0]
        if jitted is None or not sigs:
            return
        abstract, _, batch, positions = max(sigs, key=lambda e: (e[1], e[2]))
        if self._analyse(jitted, i, abstract, batch, True, True) is None:  # the model's first point: the run's
            return
        spent, last = 0.0, 0.0
        for factor in _PROBE_FACTORS:
            if spent + last > budget:
                self.log.record(k="mem_skipped", f=i, batch=batch * factor, budget_s=budget, spent_s=round(spent, 3))
                continue
            try:
                scaled = self._scaled(abstract, positions, batch, batch * factor)
            except Exception:
                return
            s = self._analyse(jitted, i, scaled, batch * factor, False, True)
            if s is None:
                return
            spent += s
            last = s


# ---------------------------------------------------------------- PyTorch/XLA


_XLA_LIBRARY = []  # the torch.library.Library of the kernel below: it lives as long as the program


def _xla_scalar_reads(torch, local, log, now, since_last, skip):
    """Logs item(), float(), int() and bool() of an XLA tensor called by the program's own code (its frame is not
    under `skip`) as a forced evaluation: a Python kernel of aten::_local_scalar_dense for the AutogradXLA key that
    goes on below autograd to PyTorch/XLA's own (the op returns a number: there is no gradient to keep). The
    call is told from the line's text. False when torch takes no such kernel."""
    import linecache

    try:
        dense = torch.ops.aten._local_scalar_dense.default
        below_autograd = torch._C._AutoDispatchBelowAutograd
        library = torch.library.Library("aten", "IMPL")
    except Exception:
        return False

    def read(tensor):
        frame = None if getattr(local, "busy", False) else sys._getframe(1)
        if frame is None or frame.f_code.co_filename.startswith(skip):
            with below_autograd():
                return dense(tensor)
        local.busy = True
        t0 = now()
        try:
            with below_autograd():
                return dense(tensor)
        finally:
            local.busy = False
            text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            what = next((call for token, call in ((".item(", "item()"), ("float(", "float()"), ("int(", "int()"))
                         if token in text), "bool()")
            log.record(k="eval", ts=t0, dur=now() - t0, kind="item", what=what, file=frame.f_code.co_filename,
                       line=frame.f_lineno, fn=frame.f_code.co_name, **since_last())

    try:
        library.impl("_local_scalar_dense", read, "AutogradXLA")
    except Exception:
        return False
    _XLA_LIBRARY.append(library)
    return True


def _register_xla(torch_xla):
    """Writes DIR/xla-PID.log (DIR = TC_XLA_LOG_DIR): each torch_xla.sync() (xm.mark_step()) as a step with the
    shapes of the graph inputs it cut, the device's memory after it where the runtime reports it (an accelerator's:
    xm.get_memory_info()), each forced evaluation of an XLA tensor by the program's own code, and with each the
    compilations, cache hits and executions PyTorch/XLA's metrics counted since the last record. Nothing of
    torch.Tensor is replaced: CPU tensors run as they would."""
    directory = os.environ.get("TC_XLA_LOG_DIR")
    if not directory:
        return
    import functools
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
    last = [0, 0, 0, 0, 0]  # UncachedCompile, CompileTime total ns, ExecuteTime count, ExecuteTime total ns, CachedCompile

    def metric(name):
        m = xla_metric(name)
        return (int(m[0]), int(m[1])) if m else (0, 0)

    def since_last():
        try:
            c = int(xla_counter("UncachedCompile") or 0)
            ct = metric("CompileTime")[1]
            en, et = metric("ExecuteTime")
            hits = int(xla_counter("CachedCompile") or 0)
        except Exception:
            return {}
        d = dict(compiles=c - last[0], compile_ns=ct - last[1], executes=en - last[2], execute_ns=et - last[3], cached=hits - last[4])
        last[:] = [c, ct, en, et, hits]
        return d

    since_last()
    skip = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, torch_xla)) + ("<frozen",)

    def caller(depth):
        frame = sys._getframe(depth)
        while frame is not None and frame.f_code.co_filename.startswith(skip):
            frame = frame.f_back
        return frame

    try:
        debug_info = _XLAC._get_xla_tensor_debug_info

        def pending(tensor):  # a result the graph has yet to compute, not data moved to the device
            info = debug_info(tensor)  # data: no IR, or the IR of device data ("XLAData: None" until it is first used)
            return "IR: None" not in info and "] xla::device_data," not in info
    except Exception:
        def pending(tensor):
            return tensor.grad_fn is not None

    # Steps: each outermost sync (xm.mark_step() calls torch_xla.sync(); so does MpDeviceLoader at each batch), with
    # the graph inputs it cuts: read before the sync, when results are still pending. One record per sync.
    original_sync = torch_xla.sync

    memory_unavailable = []  # not empty once the runtime said it has no memory info (PJRT on the CPU)

    def memory_info():
        """{"mem_used", "mem_limit"[, "mem_peak"]} of the default device (xm.get_memory_info()), {} where the runtime
        has none: on the CPU, PJRT raises UNIMPLEMENTED (torch-xla 2.9), and it is not asked again. Not verified on
        an accelerator."""
        if memory_unavailable:
            return {}
        try:
            import torch_xla.core.xla_model as xm

            info = xm.get_memory_info(torch_xla.device())
            used = info.get("bytes_used")
            limit = info.get("bytes_limit")
            if used is None and "kb_total" in info:  # the older form
                used, limit = (info["kb_total"] - info["kb_free"]) * 1024, info["kb_total"] * 1024
            out = {"mem_used": int(used), "mem_limit": int(limit)}
            if info.get("peak_bytes_used") is not None:
                out["mem_peak"] = int(info["peak_bytes_used"])
            return out
        except Exception:
            memory_unavailable.append(True)
            return {}

    def sync(*args, **kwargs):
        if getattr(local, "busy", False):
            return original_sync(*args, **kwargs)
        local.busy = True
        frame = caller(2)
        inputs = _xla_graph_inputs(torch, frame, pending)
        t0 = now()
        try:
            return original_sync(*args, **kwargs)
        finally:
            local.busy = False
            extra = dict(inputs=inputs) if inputs else {}
            log.record(k="sync", ts=t0, end=now(), file=frame.f_code.co_filename if frame else "",
                       line=frame.f_lineno if frame else 0, **since_last(), **memory_info(), **extra)

    try:
        functools.update_wrapper(sync, original_sync)
        torch_xla.sync = sync
        import torch_xla.torch_xla as _module

        _module.sync = sync
    except Exception:
        pass

    # Forced evaluations: an XLA tensor read back on the host by the program's own code. Only XLA tensors reach
    # these kernels (dispatch keys AutogradXLA and XLA): CPU tensors' methods stay torch's own, in C.
    methods = ()  # what no kernel took: Tensor's methods wrapped instead (a torch too old for the kernels)
    if not _xla_scalar_reads(torch, local, log, now, since_last, skip):
        methods += (("item", "item", "item()"), ("__float__", "item", "float()"), ("__int__", "item", "int()"),
                    ("__bool__", "item", "bool()"))
    if not _xla_host_copies(torch, local, log, now, since_last, caller):
        methods += (("tolist", "to_host", "tolist()"), ("cpu", "to_host", "cpu()"), ("__repr__", "print", "repr()"),
                    ("__format__", "print", "format()"))
    if methods:
        def program_frame(tensor, depth):
            try:
                if not tensor.is_xla:  # an XLA tensor's .device waits for its pending transfer: 0.5 ms
                    return None
            except Exception:
                return None
            frame = caller(depth + 1)  # caller's own frame is one more
            return frame if frame is not None and frame is sys._getframe(depth) else None

        _wrap_reads(torch.Tensor, methods, local, "busy", log, now, program_frame, since_last)


def _xla_graph_inputs(torch, frame, pending):
    """{name: shape} of the graph inputs in `frame`'s locals (the program's frame that called torch_xla.sync(), or
    iterates MpDeviceLoader, whose sync cuts the step): XLA tensors that hold data (moved to the device, not results
    pending in the graph) and are not parameters, by the name the program gave them; a dict, list or tuple of them
    (a batch) one level down, as batch['input_ids'] or batch[0]."""
    Tensor = torch.Tensor
    found = {}
    seen = set()

    def take(name, value):
        if isinstance(value, Tensor) and id(value) not in seen and len(found) < 64:
            seen.add(id(value))
            try:
                if value.is_xla and value.dim() > 0 and not value.requires_grad and not pending(value):
                    found[name] = list(value.shape)
            except Exception:
                pass

    try:
        names = list(frame.f_locals.items()) if frame is not None else ()
    except Exception:
        return found
    for name, value in names:
        for item in _batch_items(name, value, str):
            take(*item)
    return found


def _xla_host_copies(torch, local, log, now, since_last, caller):
    """Logs an XLA tensor copied to the host (tolist(), cpu(), .to("cpu"), printing it) as a forced evaluation: a
    Python kernel of aten::_to_copy for the XLA key (below autograd: gradients are kept) that calls PyTorch/XLA's own
    kernel, and logs only a copy to the CPU. The program's frame is the first outside torch and torch_xla; the call
    is told from the line's text. False when torch cannot hand out the kernel it replaces."""
    import linecache
    import warnings

    try:
        xla_key = torch._C.DispatchKey.XLA
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::_to_copy", xla_key)
        library = torch.library.Library("aten", "IMPL")
    except Exception:
        return False
    words = ((".tolist(", "to_host", "tolist()"), (".cpu(", "to_host", "cpu()"), (".to(", "to_host", ".to(cpu)"),
             ("print(", "print", "print()"), ("format(", "print", "format()"), ("repr(", "print", "repr()"), ("str(", "print", "str()"),
             ("f\"", "print", "format()"), ("f'", "print", "format()"))

    def to_copy(keyset, tensor, **kwargs):
        device = kwargs.get("device")
        if device is None or device.type != "cpu" or getattr(local, "busy", False):
            return original.call_boxed(keyset, tensor, **kwargs)
        frame = caller(2)
        local.busy = True
        t0 = now()
        try:
            return original.call_boxed(keyset, tensor, **kwargs)
        finally:
            local.busy = False
            if frame is not None:
                text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
                kind, what = next(((k, w) for token, k, w in words if token in text), ("to_host", "cpu()"))
                log.record(k="eval", ts=t0, dur=now() - t0, kind=kind, what=what, file=frame.f_code.co_filename,
                           line=frame.f_lineno, fn=frame.f_code.co_name, **since_last())

    try:
        with warnings.catch_warnings():  # torch warns that a kernel is replaced: this one calls it
            warnings.simplefilter("ignore")
            library.impl("_to_copy", to_copy, "XLA", with_keyset=True)
    except Exception:
        return False
    _XLA_LIBRARY.append(library)
    return True


def _install():
    register = {}
    for name, after in (("torch", _register), ("jax", _register_jax), ("torch_xla", _register_xla)):
        if name in sys.modules:
            after(sys.modules[name])
        else:
            register[name] = after
    if register:
        _watch(register)


_hide()
try:
    _install()
finally:
    _chain()
