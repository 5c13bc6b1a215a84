// Tensors: strides, offsets, poisoning, guard bytes, cloning, validation, and the seeded
// random fill every check's inputs come from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bad_input.h"
#include "kernelab/error.h"
#include "kernelab/op.h"
#include "kernelab/rng.h"
#include "kernelab/tensor.h"

namespace {

using kl::DType;
using kl::Tensor;
using ::testing::HasSubstr;

// The message of the BadInput fn throws ("" and a test failure if it throws nothing or another type).
using kl::test::bad_input_message;

TEST(Tensor, RowMajorStridesAndOffsets) {
  Tensor t = Tensor::host(DType::f32, {2, 3, 4});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 24u * 4);
  EXPECT_TRUE(t.row_major());
  EXPECT_EQ(t.offset({0, 0, 0}), 0);
  EXPECT_EQ(t.offset({1, 2, 3}), 12 + 8 + 3);
  EXPECT_EQ(t.offset({0, 1, 0}), 4);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(2), 4);
  EXPECT_EQ(t.where(), kl::Where::host);
  EXPECT_FALSE(t.empty());
}

TEST(Tensor, ColumnMajorStridesAndOffsets) {
  // A (3, 4) matrix stored column-major: element (i, j) at i + 3 j.
  Tensor t = Tensor::host_strided(DType::f32, {3, 4}, {1, 3});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(t.row_major());
  EXPECT_EQ(t.numel(), 12);
  EXPECT_EQ(t.nbytes(), 12u * 4);
  EXPECT_EQ(t.offset({0, 0}), 0);
  EXPECT_EQ(t.offset({1, 0}), 1);
  EXPECT_EQ(t.offset({0, 1}), 3);
  EXPECT_EQ(t.offset({2, 3}), 2 + 9);
  // Elements set through offset() come back in logical row-major order.
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) t.set(t.offset({i, j}), static_cast<double>(10 * i + j));
  std::vector<double> logical = kl::to_doubles(t);
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) want.push_back(static_cast<double>(10 * i + j));
  EXPECT_EQ(logical, want);
  EXPECT_EQ(t.get(1), 10.0);  // storage index 1 is (1, 0)
}

TEST(Tensor, ToDoublesReadsEveryRankInLogicalOrder) {
  Tensor s = Tensor::host(DType::f32, {});  // rank 0: one element
  EXPECT_EQ(s.numel(), 1);
  s.set(0, 2.5);
  EXPECT_EQ(kl::to_doubles(s), (std::vector<double>{2.5}));

  Tensor v = Tensor::host(DType::bf16, {3});
  for (int64_t i = 0; i < 3; ++i) v.set(i, static_cast<double>(i) - 1);
  EXPECT_EQ(kl::to_doubles(v), (std::vector<double>{-1, 0, 1}));

  // Rank 3 stored with the first dimension fastest: (i, j, l) at i + 2 j + 6 l.
  Tensor t = Tensor::host_strided(DType::f32, {2, 3, 4}, {1, 2, 6});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t l = 0; l < 4; ++l) t.set(t.offset({i, j, l}), static_cast<double>(100 * i + 10 * j + l));
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t l = 0; l < 4; ++l) want.push_back(static_cast<double>(100 * i + 10 * j + l));
  EXPECT_EQ(kl::to_doubles(t), want);
}

TEST(Tensor, StorageOfPaddedStridesCoversTheSpan) {
  // Rows of 3 elements with a leading dimension of 5: the storage spans 1 + 1*5 + 2*1 = 8 elements.
  Tensor t = Tensor::host_strided(DType::f16, {2, 3}, {5, 1});
  EXPECT_EQ(t.nbytes(), 8u * 2);
  EXPECT_EQ(t.offset({1, 2}), 7);
}

TEST(Tensor, ShapeNumelAndStr) {
  EXPECT_EQ(kl::shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(kl::shape_numel({7}), 7);
  EXPECT_EQ(kl::shape_numel({1000, 1000}), 1000000);
  EXPECT_EQ(kl::shape_numel({}), 1);
  EXPECT_EQ(kl::shape_str({1024, 768}), "1024x768");
}

TEST(Tensor, PoisonMakesEveryFloatElementNaN) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64})
    for (const kl::Shape& shape : {kl::Shape{5, 7}, kl::Shape{2053, 257}}) {  // the second over 1 MiB: split over the threads
      SCOPED_TRACE(std::string(kl::dtype_name(t)) + " " + std::to_string(shape[0]));
      Tensor x = Tensor::host(t, shape);
      x.fill_bytes(0);
      for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.get(i), 0.0);
      x.poison();
      for (int64_t i = 0; i < x.numel(); ++i) ASSERT_TRUE(std::isnan(x.get(i))) << "element " << i << " = " << x.get(i);
      EXPECT_TRUE(x.check_guards());  // poisoning stays inside the data
    }
}

TEST(Tensor, GuardsIntactAfterInBoundsWrites) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(kl::dtype_name(t)));
    Tensor x = Tensor::host(t, {3, 5});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, 1.5);
    std::memset(x.data(), 0x7B, x.nbytes());  // every data byte, first to last
    EXPECT_TRUE(x.check_guards());
  }
}

TEST(Tensor, GuardCatchesOneElementPastTheEnd) {
  Tensor x = Tensor::host(DType::f32, {3, 5});
  float* p = x.as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = 1.0f;
  ASSERT_TRUE(x.check_guards());
  p[x.numel()] = 1.0f;  // one past the end: lands in the trailing guard
  EXPECT_FALSE(x.check_guards());
}

TEST(Tensor, GuardCatchesOneElementBeforeTheStart) {
  Tensor x = Tensor::host(DType::f32, {3, 5});
  ASSERT_TRUE(x.check_guards());
  float* p = x.as<float>();
  p[-1] = 1.0f;  // one before the start: lands in the leading guard
  EXPECT_FALSE(x.check_guards());
}

TEST(Tensor, GuardCatchesHalfPrecisionOverrun) {
  Tensor x = Tensor::host(DType::bf16, {1, 7});
  uint16_t* p = x.as<uint16_t>();
  p[x.numel()] = 0;
  EXPECT_FALSE(x.check_guards());
}

TEST(Tensor, CloneCopiesDataShapeAndStrides) {
  Tensor x = Tensor::host_strided(DType::f32, {3, 4}, {1, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i) * 0.25 - 1);
  Tensor y = x.clone();
  EXPECT_EQ(y.dtype(), x.dtype());
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.strides(), x.strides());
  ASSERT_EQ(y.nbytes(), x.nbytes());
  EXPECT_NE(y.data(), x.data());
  EXPECT_EQ(std::memcmp(y.data(), x.data(), x.nbytes()), 0);
  EXPECT_TRUE(y.check_guards());
  // Separate storage: writing the original leaves the clone as it was.
  x.set(0, 42.0);
  EXPECT_EQ(y.get(0), -1.0);
  EXPECT_EQ(kl::to_doubles(y)[1], kl::to_doubles(x)[1]);
}

TEST(Tensor, HostRejectsZeroAndNegativeDimensions) {
  EXPECT_THAT(bad_input_message([] { Tensor::host(DType::f32, {3, 0}); }), HasSubstr("3x0"));
  EXPECT_THAT(bad_input_message([] { Tensor::host(DType::f32, {-2, 4}); }), HasSubstr("-2x4"));
  EXPECT_THAT(bad_input_message([] { Tensor::host(DType::bf16, {0}); }), HasSubstr("positive"));
  EXPECT_THAT(bad_input_message([] { Tensor::host_strided(DType::f32, {2, 2}, {1}); }), HasSubstr("2x2"));
}

TEST(Rng, FillUniformIsDeterministicForASeed) {
  // Larger than one fill chunk (2^16 elements), so the parallel chunks are covered.
  Tensor a = Tensor::host(DType::f32, {3, 50000}), b = Tensor::host(DType::f32, {3, 50000});
  kl::Rng ra(1234), rb(1234);
  kl::fill_uniform(a, ra, -2.0, 3.0);
  kl::fill_uniform(b, rb, -2.0, 3.0);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  // The generator advanced: a second fill from the same Rng differs from the first.
  kl::fill_uniform(b, rb, -2.0, 3.0);
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
}

TEST(Rng, FillUniformStaysInRange) {
  Tensor a = Tensor::host(DType::f32, {3, 50000});
  kl::Rng r(7);
  kl::fill_uniform(a, r, -2.0, 3.0);
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double v = a.get(i);
    ASSERT_GE(v, -2.0) << "element " << i;
    ASSERT_LT(v, 3.0) << "element " << i;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  // Spread over the range, centred where a uniform distribution is.
  EXPECT_LT(lo, -1.9);
  EXPECT_GT(hi, 2.9);
  EXPECT_NEAR(sum / static_cast<double>(a.numel()), 0.5, 0.05);
}

TEST(Rng, FillUniformNarrowDtypesInRange) {
  // Values are rounded to the dtype, so a draw just below hi may round to hi itself.
  for (DType t : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(kl::dtype_name(t)));
    Tensor a = Tensor::host(t, {100, 100});
    kl::Rng r(99);
    kl::fill_uniform(a, r, 0.5, 1.5);
    std::set<double> distinct;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double v = a.get(i);
      ASSERT_TRUE(v >= 0.5 && v <= 1.5) << "element " << i << " = " << v;
      distinct.insert(v);
    }
    EXPECT_GT(distinct.size(), 100u);
  }
}

TEST(Rng, FillUniformDiffersBetweenSeedsAndIsNotConstant) {
  Tensor a = Tensor::host(DType::f32, {64, 64}), b = Tensor::host(DType::f32, {64, 64});
  kl::Rng ra(1), rb(2);
  kl::fill_uniform(a, ra);
  kl::fill_uniform(b, rb);
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  int64_t same = 0;
  for (int64_t i = 0; i < a.numel(); ++i) same += a.get(i) == b.get(i);
  EXPECT_LT(same, a.numel() / 100);
  std::set<double> distinct;
  for (int64_t i = 0; i < a.numel(); ++i) distinct.insert(a.get(i));
  EXPECT_GT(distinct.size(), static_cast<size_t>(a.numel() * 9 / 10));
}

TEST(Rng, SameSeedSameSequence) {
  kl::Rng a(5), b(5), c(6);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform(-1, 1);
    EXPECT_GE(u, -1.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
