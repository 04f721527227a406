-- compile.amortization: one graph compiles for 2 s at step 0, then 20 steps
-- execute in 10 ms each. Compilation costs as much as 200 steps, and the run
-- had 20: it pays off on longer runs.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 2200000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 0, 2000000000, 1, 0, 'sig1', 'erased', 'first', 'mark_step', 1, 100, 60, 8, 200000000, 200000000, 1000000000, 'built', NULL, '/tmp/tc/graph1.cpp', 'tc', NULL, NULL);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 2010000000, 0, 1, 'tc'),
  (1, 2010000000, 10000000, 1, 1, 'tc'),
  (1, 2020000000, 10000000, 2, 1, 'tc'),
  (1, 2030000000, 10000000, 3, 1, 'tc'),
  (1, 2040000000, 10000000, 4, 1, 'tc'),
  (1, 2050000000, 10000000, 5, 1, 'tc'),
  (1, 2060000000, 10000000, 6, 1, 'tc'),
  (1, 2070000000, 10000000, 7, 1, 'tc'),
  (1, 2080000000, 10000000, 8, 1, 'tc'),
  (1, 2090000000, 10000000, 9, 1, 'tc'),
  (1, 2100000000, 10000000, 10, 1, 'tc'),
  (1, 2110000000, 10000000, 11, 1, 'tc'),
  (1, 2120000000, 10000000, 12, 1, 'tc'),
  (1, 2130000000, 10000000, 13, 1, 'tc'),
  (1, 2140000000, 10000000, 14, 1, 'tc'),
  (1, 2150000000, 10000000, 15, 1, 'tc'),
  (1, 2160000000, 10000000, 16, 1, 'tc'),
  (1, 2170000000, 10000000, 17, 1, 'tc'),
  (1, 2180000000, 10000000, 18, 1, 'tc'),
  (1, 2190000000, 10000000, 19, 1, 'tc');

INSERT INTO executions (utid, ts, dur, graph_id, step, trigger, nodes, execution_id) VALUES
  (1, 2000000000, 10000000, 1, 0, 'mark_step', 60, 1),
  (1, 2010000000, 10000000, 1, 1, 'mark_step', 60, 2),
  (1, 2020000000, 10000000, 1, 2, 'mark_step', 60, 3),
  (1, 2030000000, 10000000, 1, 3, 'mark_step', 60, 4),
  (1, 2040000000, 10000000, 1, 4, 'mark_step', 60, 5),
  (1, 2050000000, 10000000, 1, 5, 'mark_step', 60, 6),
  (1, 2060000000, 10000000, 1, 6, 'mark_step', 60, 7),
  (1, 2070000000, 10000000, 1, 7, 'mark_step', 60, 8),
  (1, 2080000000, 10000000, 1, 8, 'mark_step', 60, 9),
  (1, 2090000000, 10000000, 1, 9, 'mark_step', 60, 10),
  (1, 2100000000, 10000000, 1, 10, 'mark_step', 60, 11),
  (1, 2110000000, 10000000, 1, 11, 'mark_step', 60, 12),
  (1, 2120000000, 10000000, 1, 12, 'mark_step', 60, 13),
  (1, 2130000000, 10000000, 1, 13, 'mark_step', 60, 14),
  (1, 2140000000, 10000000, 1, 14, 'mark_step', 60, 15),
  (1, 2150000000, 10000000, 1, 15, 'mark_step', 60, 16),
  (1, 2160000000, 10000000, 1, 16, 'mark_step', 60, 17),
  (1, 2170000000, 10000000, 1, 17, 'mark_step', 60, 18),
  (1, 2180000000, 10000000, 1, 18, 'mark_step', 60, 19),
  (1, 2190000000, 10000000, 1, 19, 'mark_step', 60, 20);
