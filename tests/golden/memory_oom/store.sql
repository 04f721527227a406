-- memory.oom: the run asked for batch 512 and ran out of memory in step 0
-- (200 MiB requested with 120 MiB of 256 MiB live). The plan at batch 64 is
-- 36 MiB fixed + 1 MiB a sample: (256 * 0.9 - 36) / 1 = 194.4, so batch 192
-- fits, and the learning rate the run used (the optim.lr counter, 0.001)
-- scales with it. The program exited 1, and the store says the run is
-- incomplete.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 10000000, 1700000000000000000, 1, NULL, 0, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48),
  (2, 'optim.lr', '/src/train.cpp', 'main', 30);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 0, 1000000, 1, 0, 'sig1', 'erased', 'first', 'mark_step', 1, 100, 60, 8, 100000, 100000, 500000, 'built', NULL, '/tmp/tc/graph1.cpp', 'tc', NULL, NULL);

-- counter_series (derived when the store is finalized) holds its last value.
INSERT INTO counters (utid, ts, loc_id, value) VALUES
  (1, 0, 2, 0.001);

INSERT INTO memory_plans (utid, graph_id, peak_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, input_bytes, workspace_bytes, batch_bytes, batch_size, capacity_bytes) VALUES
  (1, 1, 104857600, 37748736, 0, 0, 67108864, 0, 0, 67108864, 64, 268435456);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 1000000, 0, 1, 'tc');

INSERT INTO out_of_memory (utid, ts, step, requested_bytes, live_bytes, capacity_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, input_bytes, other_bytes, batch_size) VALUES
  (1, 5000000, 0, 209715200, 125829120, 268435456, 62914560, 0, 0, 62914560, 0, 0, 512);
