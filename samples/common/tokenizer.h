// tokenizer.h: a word-level tokenizer whose vocabulary comes from the
// training split.
//
// Text is lowercased and split into words (runs of letters, digits and
// apostrophes) and single punctuation marks; control characters are dropped.
// Words seen fewer than `min_count` times in training map to <unk>.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tc_samples {

class Tokenizer {
 public:
  static constexpr int32_t kPad = 0;
  static constexpr int32_t kUnk = 1;

  static std::vector<std::string> split(std::string_view text);

  // Builds the vocabulary: most frequent first (ties alphabetical), so ids are
  // deterministic for a given training split.
  void fit(const std::vector<std::string>& texts, int64_t min_count = 2);
  // Token ids of `text`, cut to at most `max_tokens` (never kPad).
  std::vector<int32_t> encode(std::string_view text, int64_t max_tokens) const;

  int64_t vocab_size() const { return static_cast<int64_t>(words_.size()); }  // pad and unk included
  const std::string& word(int32_t id) const { return words_.at(static_cast<std::size_t>(id)); }

 private:
  std::vector<std::string> words_{"<pad>", "<unk>"};
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace tc_samples
