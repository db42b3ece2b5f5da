#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# README command (a) run with stand-ins for apt-get, sudo, id and cmake that
# record their calls: as root it runs apt-get update before apt-get install,
# without sudo and without questions (DEBIAN_FRONTEND=noninteractive); as
# another user with sudo; and it builds the demo's target only, whose build
# (in BUILD_DIR) compiles nothing of tests/, bench/ or examples/. .ci/run
# installs the same way. Then README command (c), for real, in a fresh clone
# whose build/ is BUILD_DIR (built already, so its build is a check that the
# targets it names exist): the package it installs into .venv loads the
# library copied into it, .venv is ignored by git, and docs/PYTHON.md gives
# the same command.
#   readme_command_test.sh SOURCE_DIR BUILD_DIR WORKDIR
# The stand-ins' $ expressions expand when they run, not here.
# shellcheck disable=SC2016
set -u
src=$1 build=$2 work=$3
fail() { echo "FAILED: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/bin" "$work/tree/scripts" "$work/tree/build/tools/ufile-demo"
cmd=$(awk '/^\(a\) /{a=1} a&&/^```sh$/{b=1;next} b&&/^```$/{exit} b' "$src/README.md")
[ -n "$cmd" ] || fail "no command (a) in README.md"
echo "command (a): $cmd"
cp "$src/scripts/debian-packages.txt" "$work/tree/scripts/"
for tool in apt-get cmake ./build/tools/ufile-demo/ufile-demo; do
  case $tool in ./*) f="$work/tree/${tool#./}" ;; *) f="$work/bin/$tool" ;; esac
  printf '#!/bin/sh\necho "%s ${DEBIAN_FRONTEND:-asks} $*" >>"%s/calls"\n' \
    "${tool##*/}" "$work" >"$f"
  chmod +x "$f"
done
# sudo, as its default env_reset does, drops DEBIAN_FRONTEND.
printf '#!/bin/sh\necho sudo >>"%s/calls"\nexec env -u DEBIAN_FRONTEND "$@"\n' "$work" \
  >"$work/bin/sudo"
printf '#!/bin/sh\n[ "$1" = -u ] && echo "$FAKE_UID"\n' >"$work/bin/id"
chmod +x "$work/bin/sudo" "$work/bin/id"
for uid in 0 1000; do
  rm -f "$work/calls"
  (cd "$work/tree" && env -u DEBIAN_FRONTEND FAKE_UID=$uid PATH="$work/bin:$PATH" sh -c "$cmd") ||
    fail "command (a) failed with the stand-ins (uid $uid)"
  calls=$(tr '\n' '|' <"$work/calls")
  echo "uid $uid: $calls"
  if [ "$uid" = 0 ]; then
    case $calls in *sudo*) fail "as root, command (a) runs sudo" ;; esac
    sudo=""
  else
    sudo="sudo|"
  fi
  case $calls in
    "${sudo}apt-get noninteractive update|${sudo}apt-get noninteractive install -y"*) ;;
    *) fail "command (a) does not run apt-get update, then apt-get install, noninteractive" ;;
  esac
  case $calls in
    *"|cmake asks --build build --target ufile-demo|ufile-demo asks |") ;;
    *) fail "command (a) does not build the target ufile-demo alone, then run the demo" ;;
  esac
done
# .ci/run installs the same way before running scripts/test.sh.
mkdir -p "$work/tree/.ci"
cp "$src/.ci/run" "$work/tree/.ci/run"
printf '#!/bin/sh\necho "test.sh $*" >>"%s/calls"\n' "$work" >"$work/tree/scripts/test.sh"
chmod +x "$work/tree/.ci/run" "$work/tree/scripts/test.sh"
for uid in 0 1000; do
  rm -f "$work/calls"
  env -u DEBIAN_FRONTEND FAKE_UID=$uid PATH="$work/bin:$PATH" "$work/tree/.ci/run" ||
    fail ".ci/run failed with the stand-ins (uid $uid)"
  calls=$(tr '\n' '|' <"$work/calls")
  echo ".ci/run, uid $uid: $calls"
  sudo=""
  [ "$uid" = 0 ] || sudo="sudo|"
  case $calls in
    "${sudo}apt-get noninteractive update -qq|${sudo}apt-get noninteractive install"*"|test.sh |") ;;
    *) fail ".ci/run does not install noninteractive, then run scripts/test.sh" ;;
  esac
done
if [ -f "$build/build.ninja" ]; then
  extra=$(ninja -C "$build" -t commands ufile-demo | grep -E " $src/(tests|bench|examples)/")
  [ -z "$extra" ] || fail "building ufile-demo compiles more than the demo needs: $extra"
  echo "command (a) installs as root or with sudo and builds the demo's target only"
else
  echo "not a Ninja build: the demo's build plan is not checked"
fi

# Command (c), in a fresh clone (with this tree's python/, so that uncommitted
# changes are what is tested; in CI both are the same).
block() {  # the command after the line starting with $1 in file $2
  awk -v start="$1" 'index($0, start) == 1 {a=1} a&&/^```sh$/{b=1;next} b&&/^```$/{exit} b' "$2"
}
cmd=$(block "(c) " "$src/README.md")
[ -n "$cmd" ] || fail "no command (c) in README.md"
echo "command (c): $cmd"
doc=$(block "<!-- doc-test: readme-command -->" "$src/docs/PYTHON.md")
[ "$doc" = "$cmd" ] || fail "docs/PYTHON.md's install command differs from README's (c): $doc"
clone=$work/clone
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git clone -q "$src" "$clone" || fail "git clone $src failed"
  rm -rf "$clone/python"
  (cd "$src" && git ls-files -co --exclude-standard python) >"$work/python-files"
  (cd "$src" && tar -cf - -T "$work/python-files") | tar -C "$clone" -xf - ||
    fail "copying python/ failed"
else
  mkdir -p "$clone" && cp -r "$src/python" "$clone/python"
  rm -rf "$clone/python/build" "$clone/python/"*.egg-info
fi
ln -s "$build" "$clone/build"
out=$(cd "$clone" && env -u UFILE_LIBRARY -u UFILE_DROPIN -u PYTHONPATH -u VIRTUAL_ENV \
      timeout 240 sh -c "$cmd" 2>&1) || fail "command (c) failed: $out"
printf '%s\n' "$out" | tail -3
last=$(printf '%s\n' "$out" | tail -1)
case $last in
  "ufile "*" loads $clone/.venv/lib/python3"*"/site-packages/ufile/libufile.so.0") ;;
  *) fail "command (c) does not end with the installed package loading its own library: $last" ;;
esac
[ -f "$(dirname "${last##* loads }")/libcufile.so.0" ] || fail "the drop-in was not installed"
if [ -d "$clone/.git" ] && git -C "$clone" status --porcelain | grep -q "\.venv"; then
  fail "git status lists .venv: it should be ignored"
fi
echo "command (c) builds the library, its drop-in and the tools and installs the package"
