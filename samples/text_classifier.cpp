// text_classifier: which fortune file does a quote come from?
//
// Real text nobody here wrote (Debian's `fortunes`), a word-level tokenizer
// fitted on the training split, a small Transformer encoder with a
// key-padding mask, mean pooling over the real tokens, AdamW.
//
// It shows the shape traps of a training compiler and their fixes:
//   --padding longest      every batch is as long as its longest quote: the
//                          sequence dimension of "input_ids" changes and each
//                          new length compiles the step again (the default,
//                          as with dynamic padding in common data collators);
//   --padding max_length   one shape, one compilation of the training step;
//   --padding bucket       one shape per bucket (--buckets 32,64,128);
//   (no --drop-last)       the epoch's short last batch changes dim 0 once it
//                          is reached; --drop-last or --pad-last-batch fix it.
// The held-out evaluation always pads its last batch to --batch-size rows.
//
// Data-parallel: `mpirun -np 2 tc-sample-text-classifier ...` (tc::dist)
// splits each batch of --batch-size over the ranks (rank r takes rows r,
// r + N, ...) and averages the gradients; rank 0 prints and evaluates. With
// --padding longest each rank pads to its own shard's longest quote, so the
// ranks compile different shapes at different steps and wait for each other:
// `tc-analyze run.rank*.tcdb` names the rank and the step.
#include <CLI/CLI.hpp>
#include <tc/dist.h>
#include <tc/tc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/batching.h"
#include "common/fortunes.h"
#include "common/tokenizer.h"

namespace {

using namespace tc_samples;

struct Config {
  std::string data_dir = kFortunesDir;
  std::string categories = "definitions,people,politics,zippy";
  std::string padding = "longest";
  int64_t max_length = 128;
  std::string buckets = "32,64,128";
  int64_t batch_size = 32;
  double lr = 3e-3;
  double weight_decay = 0.01;
  int64_t steps = 0;
  int64_t epochs = 2;
  bool drop_last = false;
  bool pad_last_batch = false;
  int64_t log_every = 50;
  uint64_t seed = 0;
  int64_t train_examples = 0;
  int64_t eval_examples = 0;
  int64_t min_count = 2;
  int64_t dim = 64, heads = 4, ff = 128, layers = 1;
};

// Embedding -> positions -> encoder layers (key-padding mask) -> mean over
// real tokens -> Linear.
class Classifier {
 public:
  Classifier(const Config& c, int64_t vocab, int64_t positions, int64_t classes, uint64_t seed)
      : tokens_(vocab, c.dim, seed), positions_(positions, c.dim, seed + 1),
        head_(c.dim, classes, true, seed + 2) {
    for (int64_t i = 0; i < c.layers; ++i)
      layers_.emplace_back(c.dim, c.heads, c.ff, 0.0, seed + 10 + static_cast<uint64_t>(i));
  }

  // ids [B, T] i32, Tokenizer::kPad after each sequence -> logits [B, C].
  tc::Tensor operator()(const tc::Tensor& ids) {
    int64_t T = ids.size(1);
    tc::Tensor pad = ids < 1;  // b8 [B, T]: true at padding (kPad == 0)
    tc::Tensor x = tokens_(ids) + positions_(tc::arange(T, tc::i32)) * 0.1;
    for (auto& layer : layers_) x = layer.encode(x, pad);
    tc::Tensor keep = tc::cast(tc::logical_not(pad), tc::f32);  // [B, T]
    tc::Tensor pooled = tc::sum(x * tc::unsqueeze(keep, -1), {1}) / tc::sum(keep, {1}, true);
    return head_(pooled);
  }

  std::vector<tc::Tensor> parameters() const {
    std::vector<tc::Tensor> p = tokens_.parameters();
    for (auto& t : positions_.parameters()) p.push_back(t);
    for (auto& l : layers_)
      for (auto& t : l.parameters()) p.push_back(t);
    for (auto& t : head_.parameters()) p.push_back(t);
    return p;
  }

  void train(bool on) {
    for (auto& l : layers_) l.train(on);
  }

 private:
  tc::nn::Embedding tokens_, positions_;
  std::vector<tc::nn::TransformerEncoderLayer> layers_;
  tc::nn::Linear head_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Config& c, const PaddingPolicy& policy) {
  auto t_start = std::chrono::steady_clock::now();
  Corpus corpus = load_fortunes(c.data_dir, split_commas(c.categories));
  if (c.train_examples > 0 && static_cast<std::size_t>(c.train_examples) < corpus.train.size())
    corpus.train.resize(static_cast<std::size_t>(c.train_examples));
  if (c.eval_examples > 0 && static_cast<std::size_t>(c.eval_examples) < corpus.test.size()) {
    // Keep the held-out set's class mix: take every k-th example.
    std::vector<Example> kept;
    std::size_t stride = corpus.test.size() / static_cast<std::size_t>(c.eval_examples);
    for (std::size_t i = 0; i < corpus.test.size() && kept.size() < static_cast<std::size_t>(c.eval_examples); i += stride)
      kept.push_back(corpus.test[i]);
    corpus.test = kept;
    std::fill(corpus.test_counts.begin(), corpus.test_counts.end(), 0);
    for (auto& e : corpus.test) ++corpus.test_counts[static_cast<std::size_t>(e.label)];
  }

  Tokenizer tok;
  {
    std::vector<std::string> texts;
    for (auto& e : corpus.train) texts.push_back(e.text);
    tok.fit(texts, c.min_count);
  }
  auto encode = [&](const std::vector<Example>& ex, std::vector<std::vector<int32_t>>& seqs,
                    std::vector<int32_t>& labels) {
    for (auto& e : ex) {
      auto ids = tok.encode(e.text, policy.max_positions());
      if (ids.empty()) ids.push_back(Tokenizer::kUnk);  // a quote of symbols only
      seqs.push_back(std::move(ids));
      labels.push_back(e.label);
    }
  };
  std::vector<std::vector<int32_t>> train_seqs, test_seqs;
  std::vector<int32_t> train_labels, test_labels;
  encode(corpus.train, train_seqs, train_labels);
  encode(corpus.test, test_seqs, test_labels);

  if (tc::dist::rank() == 0) std::printf("data: %zu train / %zu held-out quotes from %s (%s), vocabulary %lld words\n",
              corpus.train.size(), corpus.test.size(), c.data_dir.c_str(), c.categories.c_str(),
              static_cast<long long>(tok.vocab_size()));
  if (tc::dist::rank() == 0) std::printf("padding: %s (max_length %lld), batch %lld, %s\n", padding_name(policy.mode),
              static_cast<long long>(c.max_length), static_cast<long long>(c.batch_size),
              c.drop_last ? "drop last partial batch" : c.pad_last_batch ? "pad last partial batch" : "keep last partial batch");

  Classifier model(c, tok.vocab_size(), policy.max_positions(),
                   static_cast<int64_t>(corpus.categories.size()), c.seed * 100 + 1);
  auto params = model.parameters();
  const int rank = tc::dist::rank(), world = tc::dist::world_size();
  if (world > 1) tc::dist::broadcast(params);  // equal seeds already: this makes sure
  tc::optim::AdamW opt(params, {.lr = c.lr, .weight_decay = c.weight_decay});
  std::mt19937_64 gen(c.seed);

  // ---- training ----
  auto bs = static_cast<std::size_t>(c.batch_size);
  int64_t step = 0;
  int64_t total = c.steps > 0 ? c.steps : c.epochs * static_cast<int64_t>(make_batches(train_seqs.size(), bs, c.drop_last, nullptr).size());
  auto t_train = std::chrono::steady_clock::now();
  double loss_sum = 0;
  int64_t loss_n = 0;
  for (int64_t epoch = 0; step < total; ++epoch) {
    auto batches = make_batches(train_seqs.size(), bs, c.drop_last, &gen);
    if (batches.empty()) throw std::runtime_error("no training batch: fewer examples than --batch-size with --drop-last");
    for (const auto& whole : batches) {
      if (step >= total) break;
      // This rank's rows of the batch (all of it in a world of 1). A batch
      // with fewer rows than ranks is skipped by every rank alike.
      if (static_cast<int64_t>(whole.size()) < world) continue;
      std::vector<std::size_t> index;
      for (std::size_t i = static_cast<std::size_t>(rank); i < whole.size(); i += static_cast<std::size_t>(world)) index.push_back(whole[i]);
      const int64_t pad_rows = c.pad_last_batch ? (c.batch_size + world - 1 - rank) / world : 0;
      TokenBatch b = make_token_batch(train_seqs, train_labels, index, policy, pad_rows);
      tc::Tensor ids = tc::from_host(b.ids, {b.rows, b.len}, "input_ids");
      tc::Tensor labels = tc::from_host(b.labels, {b.rows}, "labels");
      tc::Tensor loss = tc::nn::cross_entropy(model(ids), labels);
      if (world > 1) {
        opt.step(tc::dist::all_reduce_mean(tc::grad(loss, params)));
      } else {
        opt.step(tc::grad(loss, params));
      }
      tc::mark_step();
      ++step;
      if (c.log_every > 0 && rank == 0) {
        loss_sum += loss.item();  // after mark_step(): free
        ++loss_n;
        if (step % c.log_every == 0 || step == total) {
          std::printf("step %5lld  epoch %lld  loss %.4f  batch [%lld, %lld]  %.1fs\n",
                      static_cast<long long>(step), static_cast<long long>(epoch),
                      loss_sum / static_cast<double>(loss_n), static_cast<long long>(b.rows),
                      static_cast<long long>(b.len), seconds_since(t_train));
          std::fflush(stdout);
          loss_sum = 0, loss_n = 0;
        }
      }
    }
  }
  double train_s = seconds_since(t_train);
  if (rank != 0) {
    tc::dist::barrier();  // rank 0 evaluates; the others wait for it
    return 0;
  }

  // ---- held-out evaluation: every batch padded to batch_size rows ----
  model.train(false);
  auto t_eval = std::chrono::steady_clock::now();
  int64_t correct = 0, seen = 0;
  std::size_t classes = corpus.categories.size();
  for (const auto& index : make_batches(test_seqs.size(), bs, false, nullptr)) {
    TokenBatch b = make_token_batch(test_seqs, test_labels, index, policy, c.batch_size);
    tc::Tensor logits = model(tc::from_host(b.ids, {b.rows, b.len}, "input_ids"));
    tc::mark_step();
    std::vector<float> host = logits.to_host();  // after mark_step(): free
    for (int64_t r = 0; r < b.real_rows; ++r) {
      const float* row = host.data() + static_cast<std::size_t>(r) * classes;
      auto pred = std::max_element(row, row + classes) - row;
      correct += pred == b.labels[static_cast<std::size_t>(r)];
      ++seen;
    }
  }
  double eval_s = seconds_since(t_eval);

  auto majority = std::max_element(corpus.test_counts.begin(), corpus.test_counts.end());
  double acc = 100.0 * static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(seen, 1));
  double base = 100.0 * static_cast<double>(*majority) / static_cast<double>(std::max<int64_t>(seen, 1));
  std::printf("trained %lld steps in %.1fs, evaluated in %.1fs (%.1fs in all)\n",
              static_cast<long long>(step), train_s, eval_s, seconds_since(t_start));
  std::printf("held-out accuracy: %.1f%% (%lld/%lld); majority-class baseline: %.1f%% (%s); margin: %+.1f points\n",
              acc, static_cast<long long>(correct), static_cast<long long>(seen), base,
              corpus.categories[static_cast<std::size_t>(majority - corpus.test_counts.begin())].c_str(),
              acc - base);
  if (world > 1) tc::dist::barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "Classify quotes from Debian's fortunes by category with a small Transformer encoder on tc.\n"
      "Shows how padding decides recompilation: --padding longest recompiles for each new\n"
      "sequence length; max_length and bucket keep the shapes fixed. Without --drop-last the\n"
      "epoch's short last batch changes the batch dimension once.",
      "tc-sample-text-classifier"};
  app.add_option("--padding", c.padding, "longest | max_length | bucket")->capture_default_str();
  app.add_option("--max-length", c.max_length, "Longest sequence, in tokens (longer quotes are cut)")->capture_default_str();
  app.add_option("--buckets", c.buckets, "Lengths to pad to with --padding bucket, comma-separated")->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "Examples per batch")->capture_default_str();
  app.add_option("--lr", c.lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--weight-decay", c.weight_decay, "AdamW decoupled weight decay")->capture_default_str();
  app.add_option("--steps", c.steps, "Training steps (0: use --epochs)")->capture_default_str();
  app.add_option("--epochs", c.epochs, "Passes over the training split when --steps is 0")->capture_default_str();
  app.add_flag("--drop-last", c.drop_last, "Drop each epoch's short last batch (fixes the dim-0 recompilation)");
  app.add_flag("--pad-last-batch", c.pad_last_batch, "Pad the short last batch with ignored rows instead");
  app.add_option("--log-every", c.log_every, "Print the mean loss every N steps, read with item() after mark_step (0: never)")->capture_default_str();
  app.add_option("--seed", c.seed, "Seed of the model's initialization and of the epoch shuffles")->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "Directory of the fortunes files")->capture_default_str();
  app.add_option("--categories", c.categories, "Fortune files to classify, comma-separated")->capture_default_str();
  app.add_option("--train-examples", c.train_examples, "Use only the first N training quotes (0: all)")->capture_default_str();
  app.add_option("--eval-examples", c.eval_examples, "Evaluate on N held-out quotes, spread over the split (0: all)")->capture_default_str();
  app.add_option("--min-count", c.min_count, "Words seen fewer times in training become <unk>")->capture_default_str();
  app.add_option("--dim", c.dim, "Model width")->capture_default_str();
  app.add_option("--heads", c.heads, "Attention heads")->capture_default_str();
  app.add_option("--ff", c.ff, "Feed-forward width")->capture_default_str();
  app.add_option("--layers", c.layers, "Encoder layers")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  PaddingPolicy policy;
  auto mode = parse_padding(c.padding);
  auto buckets = parse_buckets(c.buckets);
  if (!mode || !buckets || c.max_length < 1 || c.batch_size < 1 || c.dim % c.heads != 0) {
    std::fprintf(stderr, "tc-sample-text-classifier: bad options (--padding longest|max_length|bucket, "
                         "--buckets like 16,32,64, --max-length and --batch-size >= 1, --dim divisible by --heads)\n");
    return 2;
  }
  policy.mode = *mode;
  policy.max_length = c.max_length;
  policy.buckets = *buckets;
  try {
    tc::dist::init();  // a world of 1 without mpirun
    return run(c, policy);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tc-sample-text-classifier: %s\n", e.what());
    return 1;
  }
}
