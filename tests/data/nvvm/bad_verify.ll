; BAD: %s is defined in %body and used in %exit, which %body does not
; dominate: it parses, and the LLVM verifier inside libnvvm rejects it.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @broken(float addrspace(1)* %y, i1 %c) {
entry:
  br i1 %c, label %body, label %exit
body:
  %v = load float, float addrspace(1)* %y, align 4
  %s = fadd float %v, %v
  br label %exit
exit:
  store float %s, float addrspace(1)* %y, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, i1)* @broken, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
