-- kernel.hotspot: one 4 s execution with two kernels. The matrix product
-- (from train.cpp:88 and :90) runs twice for 1 s, 2e9 FLOPs over 1 MB each
-- call: compute-bound against the ceilings (100 GFLOP/s, 10 GB/s) and at 2% of
-- them. The elementwise kernel (train.cpp:91) runs once for 1 s.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 10000000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 5000000000, 0, 1, 'tc');

INSERT INTO executions (utid, ts, dur, graph_id, step, trigger, nodes, execution_id) VALUES
  (1, 0, 4000000000, 1, 0, 'mark_step', 60, 1);

INSERT INTO kernels (utid, graph_id, kernel, kind, ops, loop, bytes_read, bytes_written, flops, sites) VALUES
  (1, 1, 0, 'matmul', 'matmul', '8x8', 500000, 500000, 2000000000, '/src/train.cpp:88;/src/train.cpp:90'),
  (1, 1, 1, 'elementwise', 'add,relu', '8x8', 200000000, 200000000, 100000000, '/src/train.cpp:91');

INSERT INTO kernel_executions (utid, execution_id, graph_id, kernel, ts, dur) VALUES
  (1, 1, 1, 0, 0, 1000000000),
  (1, 1, 1, 0, 1000000000, 1000000000),
  (1, 1, 1, 1, 2000000000, 1000000000);

INSERT INTO ceilings (utid, backend, gflops, gbps, source) VALUES
  (1, 'cpu', 100.0, 10.0, 'measured');
