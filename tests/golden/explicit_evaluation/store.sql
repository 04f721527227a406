-- explicit_evaluation: 20 steps of 10 ms; item() at train.cpp:88 in every
-- step (3 ms each) and to_host() at train.cpp:91 in steps 0 and 10 (1 ms).
-- 3 ms a call against a 10 ms step: logging every 100 steps leaves under 1% of
-- a step.

INSERT INTO run (id, tc_version, command, cwd, host, collector, clock, start_ts, end_ts, start_unix_ns, exit_code, exit_signal, complete, event_count, dropped_count, cuda, step_range, nvtx, cupti) VALUES
  (1, '0.1.0', '["./train"]', '/work', 'golden', 'tc-profile', 'monotonic', 0, 200000000, 1700000000000000000, 0, NULL, 1, 0, 0, 'no device', NULL, 'tc', NULL);

INSERT INTO locations (id, name, file, function, line) VALUES
  (1, 'mark_step', '/src/train.cpp', 'main', 48),
  (2, 'item', '/src/train.cpp', 'main', 88),
  (3, 'to_host', '/src/train.cpp', 'main', 91);

INSERT INTO processes (upid, pid, name, start_ts, end_ts) VALUES
  (1, 4242, 'train', 0, NULL);

INSERT INTO threads (utid, upid, tid, name) VALUES
  (1, 1, 4242, 'main');

INSERT INTO steps (utid, ts, dur, step, loc_id, framework) VALUES
  (1, 0, 10000000, 0, 1, 'tc'),
  (1, 10000000, 10000000, 1, 1, 'tc'),
  (1, 20000000, 10000000, 2, 1, 'tc'),
  (1, 30000000, 10000000, 3, 1, 'tc'),
  (1, 40000000, 10000000, 4, 1, 'tc'),
  (1, 50000000, 10000000, 5, 1, 'tc'),
  (1, 60000000, 10000000, 6, 1, 'tc'),
  (1, 70000000, 10000000, 7, 1, 'tc'),
  (1, 80000000, 10000000, 8, 1, 'tc'),
  (1, 90000000, 10000000, 9, 1, 'tc'),
  (1, 100000000, 10000000, 10, 1, 'tc'),
  (1, 110000000, 10000000, 11, 1, 'tc'),
  (1, 120000000, 10000000, 12, 1, 'tc'),
  (1, 130000000, 10000000, 13, 1, 'tc'),
  (1, 140000000, 10000000, 14, 1, 'tc'),
  (1, 150000000, 10000000, 15, 1, 'tc'),
  (1, 160000000, 10000000, 16, 1, 'tc'),
  (1, 170000000, 10000000, 17, 1, 'tc'),
  (1, 180000000, 10000000, 18, 1, 'tc'),
  (1, 190000000, 10000000, 19, 1, 'tc');

INSERT INTO explicit_evaluations (utid, ts, dur, step, kind, loc_id, nodes, graph_id, framework, reason) VALUES
  (1, 1000000, 3000000, 0, 'item', 2, 12, 0, 'tc', NULL),
  (1, 5000000, 1000000, 0, 'to_host', 3, 12, 0, 'tc', NULL),
  (1, 11000000, 3000000, 1, 'item', 2, 12, 0, 'tc', NULL),
  (1, 21000000, 3000000, 2, 'item', 2, 12, 0, 'tc', NULL),
  (1, 31000000, 3000000, 3, 'item', 2, 12, 0, 'tc', NULL),
  (1, 41000000, 3000000, 4, 'item', 2, 12, 0, 'tc', NULL),
  (1, 51000000, 3000000, 5, 'item', 2, 12, 0, 'tc', NULL),
  (1, 61000000, 3000000, 6, 'item', 2, 12, 0, 'tc', NULL),
  (1, 71000000, 3000000, 7, 'item', 2, 12, 0, 'tc', NULL),
  (1, 81000000, 3000000, 8, 'item', 2, 12, 0, 'tc', NULL),
  (1, 91000000, 3000000, 9, 'item', 2, 12, 0, 'tc', NULL),
  (1, 101000000, 3000000, 10, 'item', 2, 12, 0, 'tc', NULL),
  (1, 105000000, 1000000, 10, 'to_host', 3, 12, 0, 'tc', NULL),
  (1, 111000000, 3000000, 11, 'item', 2, 12, 0, 'tc', NULL),
  (1, 121000000, 3000000, 12, 'item', 2, 12, 0, 'tc', NULL),
  (1, 131000000, 3000000, 13, 'item', 2, 12, 0, 'tc', NULL),
  (1, 141000000, 3000000, 14, 'item', 2, 12, 0, 'tc', NULL),
  (1, 151000000, 3000000, 15, 'item', 2, 12, 0, 'tc', NULL),
  (1, 161000000, 3000000, 16, 'item', 2, 12, 0, 'tc', NULL),
  (1, 171000000, 3000000, 17, 'item', 2, 12, 0, 'tc', NULL),
  (1, 181000000, 3000000, 18, 'item', 2, 12, 0, 'tc', NULL),
  (1, 191000000, 3000000, 19, 'item', 2, 12, 0, 'tc', NULL);
