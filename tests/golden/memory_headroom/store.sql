-- memory.headroom: the compiled step at batch 32 plans 4 GiB (1 GiB fixed,
-- 3 GiB that scale with the batch) on a 16 GiB device. With 10% kept free,
-- (16 * 0.9 - 1) GiB / (3/32 GiB a sample) = 142.9, so batch 136 (a multiple of
-- 8) fits. No optim.lr counter was recorded, so the learning rate's scale is
-- given as factors.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 10000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO compilations (utid, ts, dur, graph_id, step, signature, shape_erased, reason, trigger, loc_id, nodes_before, nodes_after, kernels, passes_ns, codegen_ns, build_ns, cache, diff, source_path, framework, frame, failure) VALUES
  (1, 0, 1000000, 1, 0, 'sig1', 'erased', 'first', 'mark_step', 1, 100, 60, 8, 100000, 100000, 500000, 'built', NULL, '/tmp/tc/graph1.cpp', 'tc', NULL, NULL);

INSERT INTO memory_plans (utid, graph_id, peak_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes, activation_bytes, input_bytes, workspace_bytes, batch_bytes, batch_size, capacity_bytes) VALUES
  (1, 1, 4294967296, 1073741824, 0, 0, 3221225472, 0, 0, 3221225472, 32, 17179869184);

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 1000000, 0, 1, 'tc');
