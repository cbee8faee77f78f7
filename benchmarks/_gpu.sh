# Sourced by the device scripts (gpu_session.sh, device_plan.sh, profile_candidate.sh): which GPU this is, on
# either vendor. nvidia-smi where it exists, else rocm-smi, else torch's device name (what both vendors' torch
# builds answer), so an AMD machine gets its own result tags (mi300x, ...) instead of an error.
gpu_name() {
  if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
  else
    python3 -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none')" 2>/dev/null
  fi
}
# the clocks, power and temperature beside each result (provenance); appended to the file $1
gpu_report() {
  if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee -a "$1"
  elif command -v rocm-smi > /dev/null 2>&1; then
    rocm-smi --showproductname --showclocks --showpower --showtemp 2>&1 | tee -a "$1"
  else
    echo "gpu: $(gpu_name)" | tee -a "$1"
  fi
}
