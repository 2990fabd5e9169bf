/* psdp-info: prints the library version and every configuration parameter with its resolved value and
 * where the value came from (config, env or default). `--markdown` prints the README's table instead;
 * `--algorithms` the algorithm table in force (`--signature` adds a tuning file's rules for an
 * interconnect); `--providers` the collective providers of this build.
 * Written in C against the public header only, as any user would. */
#include <psdp/psdp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE* out) {
  fprintf(out,
          "usage: psdp-info [--markdown | --algorithms [--signature SIGNATURE] | --providers]\n"
          "  prints psdp's version and every parameter: its value now, where the value comes from\n"
          "  (env: a PSDP_* variable is set; default: built-in), its type and what it does.\n"
          "  --markdown    the parameter table as it appears in README.md\n"
          "  --algorithms  the rules that choose each collective's algorithm, in force now (first match\n"
          "                wins): PSDP_ALGORITHMS, then PSDP_ALGORITHM, then the built-in rules for\n"
          "                UCX's default transports under PSDP_PROGRESS (a provider such as host-ring\n"
          "                may replace them); the first line says which tuning file is loaded\n"
          "                (PSDP_TUNING_FILE or the search path) and its sections\n"
          "  --signature   with --algorithms: the table a communicator on that interconnect uses, its\n"
          "                built-in rules and the tuning file section's that covers it, e.g.\n"
          "                'provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2' (a communicator's\n"
          "                info line names its own)\n"
          "  --providers   the collective providers of this build: the memory kinds each serves, how\n"
          "                its operations progress, what it runs\n");
  return out == stderr ? 2 : 0;
}

/* Markdown cell text: '|' would end the cell. */
static void print_cell(const char* text) {
  for (; *text; ++text) {
    if (*text == '|') putchar('\\');
    putchar(*text);
  }
}

static int print_markdown(void) {
  printf("| variable | type | default | description |\n|---|---|---|---|\n");
  for (int i = 0; i < psdp_param_count(); ++i) {
    psdp_param_info_t info;
    if (psdp_param_get(NULL, i, &info) != PSDP_SUCCESS) {
      /* A malformed PSDP_* variable must not stop the table from printing: it documents defaults. */
      fprintf(stderr, "psdp-info: %s\n", psdp_get_last_error(NULL));
      return 1;
    }
    printf("| `%s` | ", info.env);
    print_cell(info.type);
    if (info.default_value[0]) {
      printf(" | `%s` | ", info.default_value);
    } else {
      printf(" | (empty) | ");
    }
    print_cell(info.help);
    printf(" |\n");
  }
  return 0;
}

static int print_values(void) {
  int version = 0;
  psdp_get_version(&version);
  printf("psdp %d.%d.%d (header %d.%d.%d)\n", version / 10000, version / 100 % 100, version % 100, PSDP_VERSION_MAJOR,
         PSDP_VERSION_MINOR, PSDP_VERSION_PATCH);
  printf("%-20s %-16s %-8s %s\n", "variable", "value", "source", "type");
  for (int i = 0; i < psdp_param_count(); ++i) {
    psdp_param_info_t info;
    if (psdp_param_get(NULL, i, &info) != PSDP_SUCCESS) {
      fprintf(stderr, "psdp-info: %s\n", psdp_get_last_error(NULL));
      return 1;
    }
    printf("%-20s %-16s %-8s %s\n", info.env, info.value[0] ? info.value : "(empty)", info.source, info.type);
    printf("    %s\n", info.help);
  }
  return 0;
}

/* --signature's value, for algorithm_table; NULL: none. */
static const char* signature = NULL;

static psdp_status_t algorithm_table(char* buf, size_t* len) {
  return psdp_algorithm_table_for(NULL, signature, buf, len);
}

/* Prints the text `get` sizes and then writes (psdp_algorithm_table's convention). */
static int print_text(psdp_status_t (*get)(char* buf, size_t* len)) {
  size_t len = 0;
  if (get(NULL, &len) != PSDP_SUCCESS) {
    fprintf(stderr, "psdp-info: %s\n", psdp_get_last_error(NULL));
    return 1;
  }
  char* text = malloc(len);
  if (text == NULL) {
    fprintf(stderr, "psdp-info: out of memory\n");
    return 1;
  }
  psdp_status_t s = get(text, &len);
  if (s == PSDP_SUCCESS) fputs(text, stdout);
  if (s != PSDP_SUCCESS) fprintf(stderr, "psdp-info: %s\n", psdp_get_last_error(NULL));
  free(text);
  return s == PSDP_SUCCESS ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--markdown") == 0) return print_markdown();
  if (argc == 2 && strcmp(argv[1], "--algorithms") == 0) return print_text(algorithm_table);
  if (argc == 4 && strcmp(argv[1], "--algorithms") == 0 && strcmp(argv[2], "--signature") == 0) {
    signature = argv[3];
    return print_text(algorithm_table);
  }
  if (argc == 2 && strcmp(argv[1], "--providers") == 0) return print_text(psdp_collective_providers);
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) return usage(stdout);
  if (argc != 1) return usage(stderr);
  return print_values();
}
