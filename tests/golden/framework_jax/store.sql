-- A JAX run, as tc's Python hook logs it: 10 steps (calls of the jitted
-- train_step, framework 'jax'), no executions. jit(train_step) compiles for
-- 1.2 s at batch dim 0 = 64 and again at 40 (step 9, the short last batch).
-- float(loss) at train.py:57 reads the loss every step and waits 4 ms for the
-- device each time.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["python","train.py"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 2700000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'train_step', '/src/train.py', 'main', 50),
  (2, 'float', '/src/train.py', 'main', 57);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'python', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 1000000, 1200000000, 1, 0, 'sig1', 'train_step', 'first', 'mark_step', 1, 100, 60, 8, 120000000, 120000000, 600000000, 'built', NULL, '/tmp/tc/graph1.cpp', 'jax', 'jit(train_step)', NULL),
  (1, 1471000000, 1200000000, 2, 9, 'sig2', 'train_step', 'shape_change', 'mark_step', 1, 100, 60, 8, 120000000, 120000000, 600000000, 'built', NULL, '/tmp/tc/graph2.cpp', 'jax', 'jit(train_step)', NULL);

INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) VALUES
  (1, 2, 'batch', 0, 64, 40, 0);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 1230000000, 0, 1, 'jax'),
  (1, 1230000000, 30000000, 1, 1, 'jax'),
  (1, 1260000000, 30000000, 2, 1, 'jax'),
  (1, 1290000000, 30000000, 3, 1, 'jax'),
  (1, 1320000000, 30000000, 4, 1, 'jax'),
  (1, 1350000000, 30000000, 5, 1, 'jax'),
  (1, 1380000000, 30000000, 6, 1, 'jax'),
  (1, 1410000000, 30000000, 7, 1, 'jax'),
  (1, 1440000000, 30000000, 8, 1, 'jax'),
  (1, 1470000000, 1230000000, 9, 1, 'jax');

INSERT INTO explicit_evaluations (utid, ts, dur, step, kind, loc_id, nodes, graph_id, framework, reason) VALUES
  (1, 1225000000, 4000000, 0, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1255000000, 4000000, 1, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1285000000, 4000000, 2, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1315000000, 4000000, 3, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1345000000, 4000000, 4, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1375000000, 4000000, 5, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1405000000, 4000000, 6, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1435000000, 4000000, 7, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 1465000000, 4000000, 8, 'item', 2, 0, 0, 'jax', 'float()'),
  (1, 2695000000, 4000000, 9, 'item', 2, 0, 0, 'jax', 'float()');

INSERT INTO framework_imports (framework, source, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note) VALUES
  ('jax', '/tmp/tc-jax', '0.4.35', 1, 21, 21, 2, 10, 0, 0, 0, NULL);
