#include "fortunes.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <stdexcept>

namespace tc_samples {

namespace {

void rstrip(std::string& s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.pop_back();
}

}  // namespace

std::vector<std::string> read_fortune_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path +
                             " (install Debian's `fortunes` package, or pass --data-dir)");
  std::vector<std::string> quotes;
  std::string line, quote;
  auto flush = [&] {
    rstrip(quote);
    if (!quote.empty()) quotes.push_back(quote);
    quote.clear();
  };
  while (std::getline(in, line)) {
    rstrip(line);
    if (line == "%") {
      flush();
    } else {
      quote += line;
      quote += '\n';
    }
  }
  flush();
  return quotes;
}

Corpus load_fortunes(const std::string& dir, const std::vector<std::string>& categories,
                     double test_fraction, uint64_t split_seed) {
  Corpus c;
  c.categories = categories;
  for (std::size_t label = 0; label < categories.size(); ++label) {
    auto quotes = read_fortune_file(dir + "/" + categories[label]);
    // std::shuffle's algorithm is the library's; a Fisher-Yates of our own
    // keeps the split identical across standard libraries.
    std::mt19937_64 gen(split_seed + label);
    for (std::size_t i = quotes.size(); i > 1; --i) std::swap(quotes[i - 1], quotes[gen() % i]);
    auto n_test = static_cast<std::size_t>(static_cast<double>(quotes.size()) * test_fraction);
    std::size_t n_train = quotes.size() - n_test;
    for (std::size_t i = 0; i < quotes.size(); ++i)
      (i < n_train ? c.train : c.test).push_back({quotes[i], static_cast<int32_t>(label)});
    c.test_counts.push_back(static_cast<int64_t>(n_test));
  }
  // Interleave the categories in the training set (callers shuffle per epoch anyway).
  std::mt19937_64 gen(split_seed);
  for (std::size_t i = c.train.size(); i > 1; --i) std::swap(c.train[i - 1], c.train[gen() % i]);
  return c;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace tc_samples
