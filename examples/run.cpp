// Runs a plan on a batch of zeros and classifies a photo through kiln's C++ wrapper: run_cpp PLAN PHOTO
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <kiln/kiln.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: run_cpp PLAN PHOTO\n";
    return 2;
  }
  try {
    kiln::sdk::EngineOptions options;
    options.backend = "cpu-reference";
    const kiln::sdk::Engine engine(kiln::sdk::Plan::load(argv[1]), options);
    kiln::sdk::Context context = engine.context();  // one per thread

    const std::vector<float> zeros(engine.inputs().at(0).elements());
    const auto outputs = context.run(zeros);
    std::cout << engine.outputs().at(0).name << ": " << outputs.at(0).size() << " values\n";

    std::ifstream in(argv[2], std::ios::binary);
    const std::vector<std::uint8_t> photo((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    const auto top = context.classify(photo, 5);
    for (std::size_t i = 0; i < top.size(); ++i) {
      std::printf("%zu. %6.2f%%  %s (%lld)\n", i + 1, top[i].probability * 100.0, top[i].label.c_str(),
                  static_cast<long long>(top[i].class_index));
    }
  } catch (const kiln::sdk::Error& error) {
    std::cerr << "kiln: error: " << error.what() << " (" << kiln_status_name(error.status()) << ")\n";
    return 1;
  }
  return 0;
}
