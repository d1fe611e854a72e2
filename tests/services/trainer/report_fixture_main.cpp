// spotlight_test_write_report_fixture DIR: writes the run report's test fixture
// (report_fixture.hpp) into DIR.
#include <iostream>

#include "tests/services/trainer/report_fixture.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: spotlight_test_write_report_fixture DIR\n";
    return 2;
  }
  spotlight::testing::write_report_fixture(argv[1]);
  return 0;
}
