-- The torch.compile run of framework_torch_compile, with the sizes tc's Python
-- hook recorded for each step (step_inputs: the compiled function's arguments).
-- x dim 1 was, step by step: 32, 32, 48, 48, 64, 128, 96, 128. torch.compile
-- made it dynamic at 64 (step 4), so its log ends there; the steps after it
-- ran 128, 96 and 128. The pad plan counts every step under the size it ran
-- (32: 2 steps, 48: 2, 64: 1, 96: 1, 128: 2) and pads to 128, the data's
-- largest, never to 64: 43.75% padding (576 of 1024), the data's own.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["python","train.py"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 3100000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'loss_of', '/src/train.py', 'loss_of', 118),
  (2, 'torch_dynamo_resume_in_loss_of_at_122', '/src/train.py', 'torch_dynamo_resume_in_loss_of_at_122', 122),
  (3, 'item', '/src/train.py', 'loss_of', 122);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'python', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

-- Frame 0 at x dim 1 = 32, 48, 64 (dynamic from 64 on); frame 1, the resume after the graph break.
INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 1000000, 800000000, 1, 0, 'sig1', 'frame0', 'first', 'mark_step', 1, 100, 60, 8, 80000000, 80000000, 400000000, 'built', NULL, '/tmp/tc/graph1.cpp', 'torch.compile', '0/0', NULL),
  (1, 900000000, 300000000, 4, 0, 'sig4', 'frame1', 'first', 'graph_break', 2, 100, 60, 8, 30000000, 30000000, 150000000, 'built', NULL, '/tmp/tc/graph4.cpp', 'torch.compile', '1/0', NULL),
  (1, 1201000000, 700000000, 2, 2, 'sig2', 'frame0', 'shape_change', 'mark_step', 1, 100, 60, 8, 70000000, 70000000, 350000000, 'built', NULL, '/tmp/tc/graph2.cpp', 'torch.compile', '0/1', NULL),
  (1, 2001000000, 900000000, 3, 4, 'sig3', 'frame0', 'shape_change', 'mark_step', 1, 100, 60, 8, 90000000, 90000000, 450000000, 'built', NULL, '/tmp/tc/graph3.cpp', 'torch.compile', '0/2', NULL);

INSERT INTO compilation_inputs (utid, graph_id, input, dim, old_value, new_value, dynamic) VALUES
  (1, 2, 'x', 1, 32, 48, 0),
  (1, 3, 'x', 1, 48, 64, 1);

-- The graph break, logged once per compilation of its frame.
INSERT INTO explicit_evaluations (utid, ts, dur, step, kind, loc_id, nodes, graph_id, framework, reason) VALUES
  (1, 850000000, 0, 0, 'item', 3, 0, 0, 'torch.compile', 'Tensor.item');

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 1150000000, 0, NULL, 'torch'),
  (1, 1150000000, 50000000, 1, NULL, 'torch'),
  (1, 1200000000, 750000000, 2, NULL, 'torch'),
  (1, 1950000000, 50000000, 3, NULL, 'torch'),
  (1, 2000000000, 950000000, 4, NULL, 'torch'),
  (1, 2950000000, 50000000, 5, NULL, 'torch'),
  (1, 3000000000, 50000000, 6, NULL, 'torch'),
  (1, 3050000000, 50000000, 7, NULL, 'torch');

INSERT INTO framework_imports (framework, source, version, files, lines, records, compilations, explicit_evaluations, unknown_kinds, malformed, truncated, note) VALUES
  ('torch.compile', '/tmp/torch_trace', '2.5.1', 1, 120, 40, 4, 1, 0, 0, 0, NULL);

INSERT INTO step_inputs (utid, step, input, dim, value) VALUES
  (1, 0, 'x', 0, 8),
  (1, 0, 'x', 1, 32),
  (1, 1, 'x', 0, 8),
  (1, 1, 'x', 1, 32),
  (1, 2, 'x', 0, 8),
  (1, 2, 'x', 1, 48),
  (1, 3, 'x', 0, 8),
  (1, 3, 'x', 1, 48),
  (1, 4, 'x', 0, 8),
  (1, 4, 'x', 1, 64),
  (1, 5, 'x', 0, 8),
  (1, 5, 'x', 1, 128),
  (1, 6, 'x', 0, 8),
  (1, 6, 'x', 1, 96),
  (1, 7, 'x', 0, 8),
  (1, 7, 'x', 1, 128);
