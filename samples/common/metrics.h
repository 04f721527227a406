// metrics.h: metrics computed on the device, as part of the step's graph.
#pragma once

#include <tc/tc.h>

namespace tc_samples {

// Fraction of rows whose largest logit is the label's: logits [B, C] f32,
// labels [B] i32 -> a one-element f32 tensor (lazy like any other).
inline tc::Tensor accuracy(const tc::Tensor& logits, const tc::Tensor& labels, TC_HERE) {
  int64_t classes = logits.size(-1);
  tc::Tensor top = tc::cast(logits >= tc::max(logits, {-1}, true, where), tc::f32);   // [B, C]
  tc::Tensor hit = tc::sum(top * tc::one_hot(labels, classes, tc::f32, where), {-1}, false, where);
  return tc::mean(hit, {}, false, where);
}

}  // namespace tc_samples
