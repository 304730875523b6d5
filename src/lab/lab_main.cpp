// main() for every single-lab executable; the lab itself is linked in and registers itself.
#include "lab/cli.h"

int main(int argc, char** argv) {
  return lab::lab_main(argc, argv);
}
