// fortunes.h: the quotes of Debian's `fortunes` package as a labelled corpus.
//
// Each category is a file /usr/share/games/fortunes/<category> whose quotes
// are separated by lines holding only `%`. The held-out split is fixed: a
// shuffle seeded by `split_seed` (not the training seed), then the last
// `test_fraction` of each category is held out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tc_samples {

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct Example {
  std::string text;
  int32_t label = 0;
};

struct Corpus {
  std::vector<std::string> categories;  // label -> category name
  std::vector<Example> train, test;
  std::vector<int64_t> test_counts;     // held-out examples per label
};

// Reads one category file; throws std::runtime_error naming the path (and
// saying to install `fortunes`) when it cannot be read.
std::vector<std::string> read_fortune_file(const std::string& path);

Corpus load_fortunes(const std::string& dir, const std::vector<std::string>& categories,
                     double test_fraction = 0.2, uint64_t split_seed = 20240501);

// "a,b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_commas(const std::string& s);

}  // namespace tc_samples
