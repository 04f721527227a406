// The samples' shared library: tokenizer, padding policies, batching, the
// fixed fortunes split.
#include <gtest/gtest.h>

#include <set>

#include "common/batching.h"
#include "common/fortunes.h"
#include "common/tokenizer.h"
#include "support/process.h"

using namespace tc_samples;

namespace {

TEST(Tokenizer, LowercasesSplitsPunctuationAndMapsRareWordsToUnk) {
  EXPECT_EQ(Tokenizer::split("Don't PANIC!! 42\tx"),
            (std::vector<std::string>{"don't", "panic", "!", "!", "42", "x"}));
  Tokenizer t;
  t.fit({"the cat", "the dog", "The bird"}, 2);
  EXPECT_EQ(t.vocab_size(), 3);  // <pad>, <unk>, the
  EXPECT_EQ(t.encode("THE cat the", 10), (std::vector<int32_t>{2, Tokenizer::kUnk, 2}));
  EXPECT_EQ(t.encode("the the the", 2).size(), 2u);
}

TEST(Padding, EachPolicyPicksTheLengthItPromises) {
  PaddingPolicy p{Padding::longest, 64, {16, 32, 64}};
  EXPECT_EQ(p.length_for(7), 7);
  EXPECT_EQ(p.length_for(200), 64);
  p.mode = Padding::max_length;
  EXPECT_EQ(p.length_for(7), 64);
  p.mode = Padding::bucket;
  EXPECT_EQ(p.length_for(7), 16);
  EXPECT_EQ(p.length_for(17), 32);
  EXPECT_EQ(p.length_for(500), 64);
  EXPECT_EQ(parse_buckets("64,16, 32"), (std::vector<int64_t>{16, 32, 64}));
  EXPECT_FALSE(parse_buckets("16,x"));
  EXPECT_FALSE(parse_buckets("0"));
  EXPECT_FALSE(parse_padding("sideways"));
}

TEST(Batching, ShortLastBatchIsKeptUnlessDropLast) {
  auto kept = make_batches(40, 16, false, nullptr);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[2].size(), 8u);
  EXPECT_EQ(make_batches(40, 16, true, nullptr).size(), 2u);
  std::mt19937_64 gen(1);
  std::set<std::size_t> seen;
  for (auto& b : make_batches(40, 16, false, &gen)) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 40u);
}

TEST(Batching, PaddedRowsRepeatRowZeroAndAreIgnoredByTheLoss) {
  std::vector<std::vector<int32_t>> seqs = {{5, 6, 7}, {8}};
  std::vector<int32_t> labels = {1, 2};
  std::vector<std::size_t> index = {1, 0};
  PaddingPolicy p{Padding::longest, 64, {16}};
  TokenBatch b = make_token_batch(seqs, labels, index, p, 3);
  EXPECT_EQ(b.rows, 3);
  EXPECT_EQ(b.len, 3);
  EXPECT_EQ(b.real_rows, 2);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{8, 0, 0, 5, 6, 7, 8, 0, 0}));
  EXPECT_EQ(b.labels, (std::vector<int32_t>{2, 1, kIgnoreLabel}));
}

TEST(Fortunes, SplitIsFixedDisjointAndCoversEveryCategory) {
  if (!std::filesystem::exists(std::string(kFortunesDir) + "/computers"))
    GTEST_SKIP() << "Debian's fortunes data is not installed";
  std::vector<std::string> cats = {"computers", "zippy"};
  Corpus a = load_fortunes(kFortunesDir, cats), b = load_fortunes(kFortunesDir, cats);
  ASSERT_GT(a.train.size(), 1000u);
  ASSERT_GT(a.test.size(), 200u);
  ASSERT_EQ(a.train.size(), b.train.size());
  for (std::size_t i = 0; i < a.train.size(); ++i) ASSERT_EQ(a.train[i].text, b.train[i].text);
  std::set<std::string> train;
  for (auto& e : a.train) train.insert(e.text);
  int64_t overlap = 0;
  for (auto& e : a.test) overlap += train.count(e.text) ? 1 : 0;
  EXPECT_LE(overlap, 2) << "held-out quotes also in training (the files repeat a few quotes)";
  EXPECT_GT(a.test_counts[0], 100);
  EXPECT_GT(a.test_counts[1], 50);
  for (auto& e : a.train) ASSERT_EQ(e.text.find("\n%\n"), std::string::npos);
}

TEST(Fortunes, MissingFileNamesThePathAndThePackage) {
  try {
    read_fortune_file("/nonexistent/zippy");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/zippy"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fortunes"), std::string::npos);
  }
}

}  // namespace
