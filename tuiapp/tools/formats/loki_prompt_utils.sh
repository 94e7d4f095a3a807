# kep's stand-in for Loki's functions/utils/prompt-utils.sh (LLM_PROMPT_UTILS_FILE).
#
# Loki tools `source` this file for guard_operation, guard_path, patch_file and the log
# helpers. Under kep a tool never has a terminal, so nothing here reads from one:
# - guard_operation / guard_path pass: kep's approval (the user's yes in kep's UI, or a rule
#   the user wrote, as AUTO_CONFIRM is in Loki) already decided that this call may run.
# - every interactive prompt (confirm, input, list, checkbox, password, editor, range) fails
#   closed: it says so on stderr and answers "no" / nothing, so the tool stops instead of
#   acting on an answer nobody gave.
# - output is plain text: it goes to the model, where colour codes are noise.

red="" green="" gold="" blue="" magenta="" cyan="" white="" default="" gray="" bold=""
underlined=""

error() { echo "ERROR: $1"; }
warn() { echo "WARN: $1"; }
info() { echo "INFO: $1"; }
debug() { echo "DEBUG: $1"; }
trace() { echo "TRACE: $1"; }
success() { echo "SUCCESS: $1"; }
red() { echo "$1"; }
green() { echo "$1"; }
gold() { echo "$1"; }
blue() { echo "$1"; }
magenta() { echo "$1"; }
cyan() { echo "$1"; }
white() { echo "$1"; }

_kep_no_tty() {
  echo "$1: needs an answer typed at a terminal; tools run by kep have none (declined)" >&2
}

confirm() { _kep_no_tty confirm; echo -n 0; }
input() { _kep_no_tty input; return 1; }
password() { _kep_no_tty password; return 1; }
list() { _kep_no_tty list; return 1; }
checkbox() { _kep_no_tty checkbox; return 1; }
editor() { _kep_no_tty editor; return 1; }
range() { _kep_no_tty range; return 1; }
with_validate() { _kep_no_tty with_validate; return 1; }
validate_present() { [[ -n "$1" ]]; }
show_error() { echo "ERROR: $1" >&2; }
show_success() { echo "$1" >&2; }

guard_operation() { return 0; }

guard_path() {
  if [[ "$#" -ne 2 ]]; then
    echo "Usage: guard_path <path> <confirmation_prompt>" >&2
    exit 1
  fi
  return 0
}

detect_os() {
  case "$(uname -s 2>/dev/null)" in
    Darwin) echo macos ;;
    Linux) echo linux ;;
    MINGW*|MSYS*|CYGWIN*) echo windows ;;
    *) echo unknown ;;
  esac
}

get_opener() {
  case "$(detect_os)" in
    macos) echo open ;;
    windows) echo start ;;
    *) echo xdg-open ;;
  esac
}

# A tool run by kep does not launch a browser on its own: the URL goes into its output.
open_link() {
  echo "Please open the following URL in your browser:"
  echo "$1"
  return 1
}

# patch_file FILE PATCH: print FILE with the unified-diff hunks of PATCH applied, in order.
# A hunk's old text (context and `-` lines) must appear after the previous hunk's end; its
# new text (context and `+` lines) replaces it. Header lines (---, +++) are skipped.
patch_file() {
  awk '
    FNR == NR { src[++n] = $0; next }
    /^--- / || /^\+\+\+ / { next }
    /^@@/ { h++; inhunk = 1; next }
    inhunk && (/^[ +-]/ || /^[ \t]*$/) {
      body = substr($0, 2)
      if ($0 !~ /^\+/) { old[h, ++oldn[h]] = body }
      if ($0 !~ /^-/) { new[h, ++newn[h]] = body }
      next
    }
    { inhunk = 0 }
    END {
      if (h == 0) { print "error: no patch" > "/dev/stderr"; exit 1 }
      pos = 1
      for (k = 1; k <= h; k++) {
        at = 0
        for (i = pos; i + oldn[k] - 1 <= n && !at; i++) {
          same = 1
          for (j = 1; j <= oldn[k]; j++) if (src[i + j - 1] != old[k, j]) { same = 0; break }
          if (same) at = i
        }
        if (!at) { print "error: unable to apply patch" > "/dev/stderr"; exit 1 }
        for (i = pos; i < at; i++) out[++m] = src[i]
        for (j = 1; j <= newn[k]; j++) out[++m] = new[k, j]
        pos = at + oldn[k]
      }
      for (i = pos; i <= n; i++) out[++m] = src[i]
      for (i = 1; i <= m; i++) print out[i]
    }' "$1" "$2"
}
