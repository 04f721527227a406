-- A jax run whose hook recorded the argument shapes of 5 of its 6 steps
-- (step_inputs; the last step's record is missing, as when the hook stopped at
-- its size limit). train_step compiles at token_ids dim 1 = 32, 64 and 128;
-- by step: 32, 64, 32, 128, 64, then a step of unknown size. The plan counts
-- the 5 steps it saw under their sizes (32: 2, 64: 2, 128: 1), and the
-- suggestion says that 1 of the 6 steps has no record.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["python","train_jax.py"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 2600000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'train_step', '/src/train_jax.py', 'main', 40);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 5151, 'python', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 5151, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, cache, framework, frame) VALUES
  (1, 1000000, 600000000, 1, 0, 'jax train_step #0', 'jax train_step', 'first', 'jit_call', 1, 'built', 'jax', 'jit(train_step)'),
  (1, 700000000, 650000000, 2, 1, 'jax train_step #1', 'jax train_step', 'shape_change', 'jit_call', 1, 'built', 'jax', 'jit(train_step)'),
  (1, 1500000000, 700000000, 3, 3, 'jax train_step #2', 'jax train_step', 'shape_change', 'jit_call', 1, 'built', 'jax', 'jit(train_step)');

INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) VALUES
  (1, 2, 'token_ids', 1, 32, 64, 0),
  (1, 3, 'token_ids', 1, 64, 128, 0);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 690000000, 0, NULL, 'jax'),
  (1, 690000000, 700000000, 1, NULL, 'jax'),
  (1, 1390000000, 30000000, 2, NULL, 'jax'),
  (1, 1420000000, 1020000000, 3, NULL, 'jax'),
  (1, 2440000000, 50000000, 4, NULL, 'jax'),
  (1, 2490000000, 60000000, 5, NULL, 'jax');

INSERT INTO step_inputs (utid, step, input, dim, value) VALUES
  (1, 0, 'token_ids', 0, 8), (1, 0, 'token_ids', 1, 32),
  (1, 1, 'token_ids', 0, 8), (1, 1, 'token_ids', 1, 64),
  (1, 2, 'token_ids', 0, 8), (1, 2, 'token_ids', 1, 32),
  (1, 3, 'token_ids', 0, 8), (1, 3, 'token_ids', 1, 128),
  (1, 4, 'token_ids', 0, 8), (1, 4, 'token_ids', 1, 64);

INSERT INTO framework_imports (framework, source, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note) VALUES
  ('jax', '/tmp/jax_logs', '0.10.2', 1, 40, 40, 3, 0, 0, 0, 0, NULL);
