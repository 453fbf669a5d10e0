#include <iostream>

int main() {
  std::cout << "kiln " << KILN_VERSION << "\n";
  return 0;
}
