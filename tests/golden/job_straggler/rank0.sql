-- Rank 0 of a two-rank job (job-7): 6 steps, each one execution of 10 ms
-- and then an all-reduce that ends 1 ms after the last rank arrives. Rank 1
-- recompiles for 300 ms in step 3 (tokens dim 1: 12 -> 20) before its
-- execution, so rank 0 waits for it there: distributed.straggler names rank 1,
-- step 3 and the compilation. Rank 1's clock is 5 ms behind rank 0's.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'host0', 'tc-profile', 'monotonic', 0, 397000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 80),
  (2, 'all_reduce_mean', '/src/train.cpp', 'main', 70);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 1000, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 1000, NULL);

-- Its place in the job, and its clock against rank 0's.
INSERT INTO ranks (utid, rank, world_size, host, job, clock_offset_ns, clock_error_ns) VALUES
  (1, 0, 2, 'host0', 'job-7', 0, 2000);

INSERT INTO run_env (name, value) VALUES
  ('OMPI_COMM_WORLD_RANK', '0'),
  ('OMPI_COMM_WORLD_SIZE', '2'),
  ('PMIX_NAMESPACE', 'job-7');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 10000000, 20000000, 1, 0, 'sig1', 'erased', 'first', 'mark_step', 1, 100, 60, 8, 2000000, 2000000, 10000000, 'built', NULL, '/tmp/tc/graph1.cpp', 'tc', NULL, NULL);

INSERT INTO executions (utid, ts, dur, graph_id, step, trigger, nodes, execution_id) VALUES
  (1, 30000000, 10000000, 1, 0, 'mark_step', 60, 1),
  (1, 41000000, 10000000, 1, 1, 'mark_step', 60, 2),
  (1, 52000000, 10000000, 1, 2, 'mark_step', 60, 3),
  (1, 63000000, 10000000, 1, 3, 'mark_step', 60, 4),
  (1, 374000000, 10000000, 1, 4, 'mark_step', 60, 5),
  (1, 385000000, 10000000, 1, 5, 'mark_step', 60, 6);

-- ts: when this rank arrived; dur: until the last rank had arrived, plus 1 ms.
INSERT INTO collectives (utid, ts, dur, step, seq, op, bytes, tensors, loc_id) VALUES
  (1, 40000000, 1000000, 0, 1, 'all_reduce_mean', 848, 4, 2),
  (1, 51000000, 1000000, 1, 2, 'all_reduce_mean', 848, 4, 2),
  (1, 62000000, 1000000, 2, 3, 'all_reduce_mean', 848, 4, 2),
  (1, 73000000, 301000000, 3, 4, 'all_reduce_mean', 848, 4, 2),
  (1, 384000000, 1000000, 4, 5, 'all_reduce_mean', 848, 4, 2),
  (1, 395000000, 1000000, 5, 6, 'all_reduce_mean', 848, 4, 2);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 10000000, 31000000, 0, 1, 'tc'),
  (1, 41000000, 11000000, 1, 1, 'tc'),
  (1, 52000000, 11000000, 2, 1, 'tc'),
  (1, 63000000, 311000000, 3, 1, 'tc'),
  (1, 374000000, 11000000, 4, 1, 'tc'),
  (1, 385000000, 11000000, 5, 1, 'tc');
