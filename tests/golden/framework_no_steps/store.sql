-- A torch.compile run imported from TORCH_TRACE without steps (python -I:
-- no hook, so no optimizer steps). Frame 0 ('loss_of' at train.py:118)
-- compiles its forward for 1.0 s, then AOT autograd compiles its backward at
-- the first backward() for 0.5 s (bwd_compilation_metrics: trigger 'backward',
-- the same frame '0/0'); it recompiles at x dim 1 48 -> 64 (0/1, 0.6 s) with
-- its backward (0.4 s). Expected: 2 compilations (1 recompilation), compile
-- 2.5 s (the backwards included); execute not measured (no steps to time
-- it); compile.amortization says its break-even is not known instead of "1
-- of 0 steps", with null execute_s_per_step and break_even_steps.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["python","-I","train.py"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 4000000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'loss_of', '/src/train.py', 'loss_of', 118);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'python', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 100000000, 1000000000, 1, 0, 'torch.compile 0/0', 'frame0', 'first', 'frame_call', 1, 20, 20, 0, 0, 0, 800000000, 'built', NULL, NULL, 'torch.compile', '0/0', NULL),
  (1, 1200000000, 500000000, 2, 0, 'torch.compile 0/0 backward', 'frame0', 'first', 'backward', 1, 0, 0, 0, 0, 0, 450000000, 'built', NULL, NULL, 'torch.compile', '0/0', NULL),
  (1, 2000000000, 600000000, 3, 0, 'torch.compile 0/1', 'frame0', 'shape_change', 'frame_call', 1, 20, 20, 0, 0, 0, 500000000, 'built', NULL, NULL, 'torch.compile', '0/1', NULL),
  (1, 2700000000, 400000000, 4, 0, 'torch.compile 0/1 backward', 'frame0', 'shape_change', 'backward', 1, 0, 0, 0, 0, 0, 350000000, 'built', NULL, NULL, 'torch.compile', '0/1', NULL);

INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) VALUES
  (1, 3, 'x', 1, 48, 64, 0);

INSERT INTO framework_imports (framework, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note) VALUES
  ('torch.compile', '2.15.0', 1, 40, 12, 4, 0, 0, 0, 0, NULL);
