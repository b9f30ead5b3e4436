# zcomplete.zsh - complete a command line in an interactive zsh, as a person pressing Tab does,
# and print the line completion made of it (for tests of contrib/completion/_tessel).
#
#   zsh -f tests/lib/zcomplete.zsh FPATHDIR BINDIR LINE
#
# A zsh -f -i in a pseudo-terminal (zsh/zpty) with FPATHDIR in $fpath, BINDIR first in $PATH
# and compinit run gets LINE and one Tab, bound to a widget that completes (expand-or-complete,
# as Tab does) and then prints the line, prefixed with "@@LINE ", from inside the same key
# press (no typeahead that zle could drop while completion runs); this script prints what
# follows that prefix.  The environment
# (TESSEL_URL, TESSEL_TOKEN) is passed on.  Exit 1 when no line came back within 20 s.
zmodload zsh/zpty || exit 2
local dir=$1 bindir=$2 line=$3
zpty z zsh -f -i
zpty -w z "PS1='> '; PATH=$bindir:\$PATH; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z '__tab() { zle expand-or-complete; print -r -- $'"'"'\n'"'"'"@@LINE $BUFFER"; }; zle -N __tab; bindkey "^I" __tab'
zpty -w -n z "$line"$'\t'
local out="" chunk=""
integer waited=0
while (( waited < 400 )); do
  if zpty -r -t z chunk; then
    out+=$chunk
    [[ $out == *$'\n'"@@LINE "*$'\n'* ]] && break
  else
    sleep 0.05
    (( waited++ ))
  fi
done
zpty -d z
out=${out//$'\r'/}
local l
for l in ${(f)out}; do
  [[ $l == "@@LINE "* ]] && { print -r -- "${l#@@LINE }"; exit 0 }
done
exit 1
