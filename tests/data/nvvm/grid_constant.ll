; A 128-byte by-value parameter (the size of a CUtensorMap) marked
; grid_constant, so it stays in parameter space; the kernel copies its words out.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define void @desc_copy(i32 addrspace(1)* %out, [128 x i8]* byval align 64 %desc) {
entry:
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %words = bitcast [128 x i8]* %desc to [32 x i32]*
  %pw = getelementptr [32 x i32], [32 x i32]* %words, i32 0, i32 %i
  %w = load i32, i32* %pw, align 4
  %po = getelementptr i32, i32 addrspace(1)* %out, i32 %i
  store i32 %w, i32 addrspace(1)* %po, align 4
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{void (i32 addrspace(1)*, [128 x i8]*)* @desc_copy, !"kernel", i32 1}
!1 = !{void (i32 addrspace(1)*, [128 x i8]*)* @desc_copy, !"grid_constant", !2}
!2 = !{i32 2}
!nvvmir.version = !{!3}
!3 = !{i32 2, i32 0, i32 3, i32 1}
