"""unpair.py IN.ll OUT.ll - splits clang's loads of a two-word struct
({ i64, i64 }: abar_token_t returned in registers) into two 64-bit loads.
At -O0 clang builds such a return value in memory word by word and loads
it back whole; GenMC refuses that 128-bit read of two 64-bit writes as a
mixed-size access.  Nothing else in the IR changes."""
import re
import sys

pat = re.compile(r"^(\s*)(%[\w.]+) = load \{ i64, i64 \}, ptr (%[\w.]+), align (\d+)(.*)$")
out = []
k = 0
for line in open(sys.argv[1]):
    m = pat.match(line.rstrip("\n"))
    if not m:
        out.append(line)
        continue
    ind, dst, src, _align, rest = m.groups()
    k += 1
    n = f"unpair{k}"
    out += [
        f"{ind}%{n}.p0 = getelementptr inbounds {{ i64, i64 }}, ptr {src}, i32 0, i32 0\n",
        f"{ind}%{n}.w0 = load i64, ptr %{n}.p0, align 8{rest}\n",
        f"{ind}%{n}.p1 = getelementptr inbounds {{ i64, i64 }}, ptr {src}, i32 0, i32 1\n",
        f"{ind}%{n}.w1 = load i64, ptr %{n}.p1, align 8{rest}\n",
        f"{ind}%{n}.v0 = insertvalue {{ i64, i64 }} undef, i64 %{n}.w0, 0\n",
        f"{ind}{dst} = insertvalue {{ i64, i64 }} %{n}.v0, i64 %{n}.w1, 1{rest}\n",
    ]
open(sys.argv[2], "w").writelines(out)
