# Call 75: calls 75a and 75b in one machine start (each start costs minutes of the session's
# device time). Make the trees first, here: `source experiments/device/copies.sh;
# branch_from_patch streamed-start b7ce2d0; rm -rf devrun; archive topk_ss streamed-start`,
# from a checkout of a6b5cf7; carry .whl and devrun; kind nvidia-h200 (an H100 may come:
# say which). Part a: that main in the repository root, as session75a.sh. Part b: branch
# streamed-start in devrun/topk_ss, as its session75b.sh (8 rows a program with
# `start_entries`, against the default in the same process).
source experiments/device/common.sh
topk_steady_state main root
tilings="default,block_rows=8;start_entries=4,block_rows=8;start_entries=2,block_rows=8,start_entries=4,block_rows=8;start_entries=4;lazy_tail=false"
rtilings="block_rows=8;start_entries=4;lazy_tail=false,start_entries=4,block_rows=8,block_rows=8;start_entries=2,block_rows=8;start_entries=4,default"
topk_flagged rows8_512_32_1 ss 512 32 normal,bf16_grid "$tilings"
topk_flagged rows8_512_32_2 ss 512 32 normal,bf16_grid "$rtilings"
for shape in "512 64" "1024 64" "1024 32"; do
  topk_flagged "rows8_${shape/ /_}" ss ${shape% *} ${shape#* } normal "default,block_rows=8;start_entries=4"
done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
