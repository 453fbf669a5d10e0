// Detects objects in a photo with a detector plan through kiln's C++ wrapper:
//   detect_cpp PLAN PHOTO [MIN_SCORE]
// One line per box, best first: class name, score, then the corners x1 y1 x2 y2 in the photo's pixels.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <kiln/kiln.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: detect_cpp PLAN PHOTO [MIN_SCORE]\n";
    return 2;
  }
  try {
    kiln::sdk::EngineOptions options;
    options.backend = "cpu-reference";
    kiln::sdk::Detector detector(kiln::sdk::Plan::load(argv[1]), options);  // one thread at a time
    std::ifstream in(argv[2], std::ios::binary);
    const std::vector<std::uint8_t> photo((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    const float min_score = argc == 4 ? std::stof(argv[3]) : 0.25f;
    for (const auto& d : detector.detect(photo, min_score)) {
      std::printf("%s %.6f %.3f %.3f %.3f %.3f\n", d.class_name.c_str(), d.score, d.x1, d.y1, d.x2, d.y2);
    }
  } catch (const kiln::sdk::Error& error) {
    std::cerr << "kiln: error: " << error.what() << " (" << kiln_status_name(error.status()) << ")\n";
    return 1;
  }
  return 0;
}
