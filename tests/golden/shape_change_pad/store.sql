-- recompilation.shape_change with a pad plan: input_ids dim 1 (the sequence
-- length) takes 4 values in 12 steps. Each new length compiles for 1 s; a step
-- executes in 1 ms + 20 us per token. Padding to 64 compiles once and costs
-- little padded execution, so the fix is "pad to 64"; compiling took most of
-- the run (compile.amortization).

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 4021680000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

-- One graph per length, compiled where the length first appears (graph 1 at step 0).
INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 0, 1000000000, 1, 0, 'sig1', 'erased', 'first', 'mark_step', 1, 100, 60, 8, 100000000, 100000000, 500000000, 'built', NULL, '/tmp/tc/graph1.cpp', 'tc', NULL, NULL),
  (1, 1001400000, 1000000000, 2, 1, 'sig2', 'erased', 'shape_change', 'mark_step', 1, 100, 60, 8, 100000000, 100000000, 500000000, 'built', NULL, '/tmp/tc/graph2.cpp', 'tc', NULL, NULL),
  (1, 2004520000, 1000000000, 3, 3, 'sig3', 'erased', 'shape_change', 'mark_step', 1, 100, 60, 8, 100000000, 100000000, 500000000, 'built', NULL, '/tmp/tc/graph3.cpp', 'tc', NULL, NULL),
  (1, 3008280000, 1000000000, 4, 5, 'sig4', 'erased', 'shape_change', 'mark_step', 1, 100, 60, 8, 100000000, 100000000, 500000000, 'built', NULL, '/tmp/tc/graph4.cpp', 'tc', NULL, NULL);

-- What changed, against the graph before.
INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) VALUES
  (1, 2, 'input_ids', 1, 20, 36, 0),
  (1, 3, 'input_ids', 1, 20, 52, 0),
  (1, 4, 'input_ids', 1, 36, 64, 0);

-- Lengths by step: 20 36 20 52 36 64 20 52 64 36 20 64.
INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 1001400000, 0, 1, 'tc'),
  (1, 1001400000, 1001720000, 1, 1, 'tc'),
  (1, 2003120000, 1400000, 2, 1, 'tc'),
  (1, 2004520000, 1002040000, 3, 1, 'tc'),
  (1, 3006560000, 1720000, 4, 1, 'tc'),
  (1, 3008280000, 1002280000, 5, 1, 'tc'),
  (1, 4010560000, 1400000, 6, 1, 'tc'),
  (1, 4011960000, 2040000, 7, 1, 'tc'),
  (1, 4014000000, 2280000, 8, 1, 'tc'),
  (1, 4016280000, 1720000, 9, 1, 'tc'),
  (1, 4018000000, 1400000, 10, 1, 'tc'),
  (1, 4019400000, 2280000, 11, 1, 'tc');

INSERT INTO executions (utid, ts, dur, graph_id, step, trigger, nodes, execution_id) VALUES
  (1, 1000000000, 1400000, 1, 0, 'mark_step', 60, 1),
  (1, 2001400000, 1720000, 2, 1, 'mark_step', 60, 2),
  (1, 2003120000, 1400000, 1, 2, 'mark_step', 60, 3),
  (1, 3004520000, 2040000, 3, 3, 'mark_step', 60, 4),
  (1, 3006560000, 1720000, 2, 4, 'mark_step', 60, 5),
  (1, 4008280000, 2280000, 4, 5, 'mark_step', 60, 6),
  (1, 4010560000, 1400000, 1, 6, 'mark_step', 60, 7),
  (1, 4011960000, 2040000, 3, 7, 'mark_step', 60, 8),
  (1, 4014000000, 2280000, 4, 8, 'mark_step', 60, 9),
  (1, 4016280000, 1720000, 2, 9, 'mark_step', 60, 10),
  (1, 4018000000, 1400000, 1, 10, 'mark_step', 60, 11),
  (1, 4019400000, 2280000, 4, 11, 'mark_step', 60, 12);
