; A device-function library in NVVM IR: cube(x) = x * x * x; unused() is
; never called (libnvvm links lazily, so it must not reach the PTX).
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define float @cube(float %x) {
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  ret float %x3
}

define float @unused_in_lib(float %x) {
  %y = fadd float %x, 42.0
  ret float %y
}

!nvvmir.version = !{!0}
!0 = !{i32 2, i32 0, i32 3, i32 1}
