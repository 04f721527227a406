// batching.h: batches of token ids, padded one of three ways, and the
// epoch's split into batches.
//
// How a batch is padded decides whether a training compiler sees a new shape:
//   longest     pad to the longest sequence in the batch (capped at
//               max_length): the sequence dimension changes from batch to
//               batch, and every new length is a new compilation;
//   max_length  pad every batch to max_length: one shape;
//   bucket      pad to the smallest bucket that holds the longest sequence
//               (longer ones are cut to the largest bucket): one shape per
//               bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace tc_samples {

enum class Padding { longest, max_length, bucket };
std::optional<Padding> parse_padding(const std::string& s);
const char* padding_name(Padding p);

struct PaddingPolicy {
  Padding mode = Padding::longest;
  int64_t max_length = 64;
  std::vector<int64_t> buckets;  // ascending; used by Padding::bucket

  // The padded length of a batch whose longest sequence has `longest` tokens.
  int64_t length_for(int64_t longest) const;
  // The longest padded length this policy can produce.
  int64_t max_positions() const;
};

// "32,64,128" -> {32, 64, 128}, sorted; nullopt if an item is not a positive integer.
std::optional<std::vector<int64_t>> parse_buckets(const std::string& s);

struct TokenBatch {
  int64_t rows = 0;       // dim 0 of ids
  int64_t len = 0;        // dim 1 of ids
  int64_t real_rows = 0;  // rows that are real examples; the rest repeat row 0
  std::vector<int32_t> ids;     // [rows, len], Tokenizer::kPad after each sequence
  std::vector<int32_t> labels;  // [rows]
};

// The examples `index` of (seqs, labels) as one batch. With pad_rows_to larger
// than index.size() the batch is filled up to that many rows with copies of
// its first example labelled kIgnoreLabel (cross_entropy's default
// ignore_index), so they add nothing to the loss; real_rows says which rows
// are real.
inline constexpr int32_t kIgnoreLabel = -100;
TokenBatch make_token_batch(const std::vector<std::vector<int32_t>>& seqs,
                            const std::vector<int32_t>& labels, std::span<const std::size_t> index,
                            const PaddingPolicy& policy, int64_t pad_rows_to = 0);

// 0..n-1 in batches of batch_size, shuffled by `gen` when given. The last
// partial batch is kept (as common data loaders do) unless drop_last.
std::vector<std::vector<std::size_t>> make_batches(std::size_t n, std::size_t batch_size,
                                                   bool drop_last, std::mt19937_64* gen);

}  // namespace tc_samples
