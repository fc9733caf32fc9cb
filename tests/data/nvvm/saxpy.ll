; saxpy: y[i] = a * x[i] + y[i] for i < n (a hand-written kernel for the compiler tests)
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define void @saxpy(float %a, float addrspace(1)* %x, float addrspace(1)* %y, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %in = icmp slt i32 %i, %n
  br i1 %in, label %body, label %exit
body:
  %px = getelementptr float, float addrspace(1)* %x, i32 %i
  %py = getelementptr float, float addrspace(1)* %y, i32 %i
  %vx = load float, float addrspace(1)* %px, align 4
  %vy = load float, float addrspace(1)* %py, align 4
  %ax = fmul float %a, %vx
  %s = fadd float %ax, %vy
  store float %s, float addrspace(1)* %py, align 4
  br label %exit
exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float, float addrspace(1)*, float addrspace(1)*, i32)* @saxpy, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
