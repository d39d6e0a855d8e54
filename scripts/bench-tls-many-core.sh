#!/usr/bin/env bash
# TLS side by side on a many-core machine: ferrokv vs redis-server 7.0 over TLS, each pinned
# to one core (SC), redis-benchmark --tls with BT threads on other cores (BC), 50 clients:
# SET/GET at pipeline 16 and 1, then full handshakes (-k 0 PING); ROUNDS interleaved rounds,
# requests/s and the server's CPU per operation, medians at the end.
# Use with the many-core kit (../shared/tools/many-core-bench/README.md): here, after
# make-kit.sh kit, `scripts/bench-tls-many-core.sh --certs kit` makes the certificates in
# kit/certs (the device has no openssl); there, `OUT=$OUT bash kit/bench-tls-many-core.sh`
# after copying this script into the kit.
set -u
KIT=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --certs ]; then
  SELF=$(readlink -f "$0"); DEST=$(readlink -f "${2:?kit folder}")
  C=$DEST/certs; mkdir -p "$C" && cd "$C" || exit 1
  openssl genrsa -out ca.key 2048 2>/dev/null
  openssl req -x509 -new -nodes -sha256 -key ca.key -days 30 -subj "/O=bench/CN=ca" -out ca.crt
  openssl genrsa -out server.key 2048 2>/dev/null
  openssl req -new -sha256 -subj "/O=bench/CN=server" -key server.key -out server.csr
  openssl x509 -req -sha256 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
    -out server.crt 2>/dev/null
  cp "$SELF" "$DEST/bench-tls-many-core.sh"
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; C=$KIT/certs
LD="$KIT/lib/ld-linux-x86-64.so.2 --library-path $KIT/lib"
SC=${SC:-2}; BC=${BC:-4-11}; BT=${BT:-4}; ROUNDS=${ROUNDS:-3}; N16=${N16:-1000000}; N1=${N1:-200000}; NH=${NH:-3000}
HZ=$(getconf CLK_TCK); port=25000
echo "server,round,test,rps,cpu_us_per_op" > "$OUT/tls.csv"
for r in $(seq $ROUNDS); do
  for name in ferrokv redis; do
    port=$((port+2)); bin=$KIT/redis-server; [ $name = ferrokv ] && bin=$KIT/ferrokv; D=$(mktemp -d)
    taskset -c $SC $LD $bin --port $port --tls-port $((port+1)) --dir $D --save '' --appendonly no --tls-cert-file $C/server.crt --tls-key-file $C/server.key --tls-ca-cert-file $C/ca.crt --tls-auth-clients no >$D/log 2>&1 & P=$!
    for _ in $(seq 100); do $LD $KIT/redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.05; done
    for t in "set 16 $N16" "get 16 $N16" "set 1 $N1" "get 1 $N1" "ping_inline 1 $NH -k 0"; do
      set -- $t; c0=$(awk '{print $14+$15}' /proc/$P/stat)
      rps=$(taskset -c $BC $LD $KIT/redis-benchmark -p $((port+1)) --tls --cacert $C/ca.crt -t $1 -P $2 -n $3 ${4:-} ${5:-} -c 50 --threads $BT -r 1000000 --csv 2>/dev/null | awk -F'","' 'NR>1 {gsub(/"/,"",$2); print $2; exit}')
      c1=$(awk '{print $14+$15}' /proc/$P/stat)
      n=$3; test=$1P$2; [ "${4:-}" = -k ] && test=handshake
      echo "$name,$r,$test,$rps,$(awk -v a=$c0 -v b=$c1 -v n=$n -v hz=$HZ 'BEGIN{printf "%.3f",(b-a)/hz*1e6/n}')" | tee -a "$OUT/tls.csv"
    done
    kill $P; wait $P 2>/dev/null
  done
done
awk -F, 'NR>1 {k=$1" "$3; v[k]=v[k]" "$4; u[k]=u[k]" "$5} END {for (k in v) print k, "rps:" v[k], " cpu_us/op:" u[k]}' "$OUT/tls.csv" | sort
