/* Built against an installed psdp, through find_package(psdp CONFIG) and through pkg-config. */
#include <psdp/psdp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int version = 0;
  if (psdp_get_version(&version) != PSDP_SUCCESS || version != PSDP_VERSION_CODE) {
    fprintf(stderr, "version %d, header says %d\n", version, PSDP_VERSION_CODE);
    return 1;
  }
  if (strcmp(psdp_status_string(PSDP_ERR_TIMEOUT), "timeout") != 0) return 1;
  printf("psdp %d linked\n", version);
  return 0;
}
