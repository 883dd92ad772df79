// SPDX-License-Identifier: Apache-2.0
// The Prometheus textfile helpers of `dblock clean`: the format written, samples read back, and
// the atomic replace leaving no temporary file behind.
#include "prometheus.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dblock/error.hpp"

namespace dblock::cli {
namespace {

namespace fs = std::filesystem;

class PrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dblock-prom-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(PrometheusTest, WritesTheTextFormatAndReadsItBack) {
  const std::string path = (dir_ / "dblock.prom").string();
  Metrics m;
  m["dblock_clean_deleted_total"] = {"Rows deleted.", "counter", {{"table=\"locks\"", 35}}};
  m["dblock_clean_last_run_seconds"] = {"Run time.", "gauge", {{"", 0.25}}};
  write_metrics_file(path, m);
  EXPECT_EQ(slurp(path),
            "# HELP dblock_clean_deleted_total Rows deleted.\n"
            "# TYPE dblock_clean_deleted_total counter\n"
            "dblock_clean_deleted_total{table=\"locks\"} 35\n"
            "# HELP dblock_clean_last_run_seconds Run time.\n"
            "# TYPE dblock_clean_last_run_seconds gauge\n"
            "dblock_clean_last_run_seconds 0.25\n");
  auto samples = read_metric_samples(path);
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples["dblock_clean_deleted_total{table=\"locks\"}"], 35);
  EXPECT_EQ(samples["dblock_clean_last_run_seconds"], 0.25);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);  // the temporary file was renamed over the target
}

TEST_F(PrometheusTest, ReadingSkipsJunkAndMissingFiles) {
  EXPECT_TRUE(read_metric_samples((dir_ / "absent").string()).empty());
  std::ofstream(dir_ / "junk") << "# HELP x y\nnot a sample\nx 1\ny 2z\n\nz{a=\"b c\"} 3\n";
  auto samples = read_metric_samples((dir_ / "junk").string());
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples["x"], 1);
  EXPECT_EQ(samples["z{a=\"b c\"}"], 3);
}

TEST_F(PrometheusTest, AnUnwritableDirectoryIsAClearError) {
  try {
    write_metrics_file((dir_ / "missing" / "dblock.prom").string(), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write metrics file"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dblock::cli
