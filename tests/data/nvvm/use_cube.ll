; Calls cube() from an NVVM library (lib_cube.ll).
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @cube(float)

define void @cubes(float addrspace(1)* %x) {
entry:
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr float, float addrspace(1)* %x, i32 %i
  %v = load float, float addrspace(1)* %p, align 4
  %c = call float @cube(float %v)
  store float %c, float addrspace(1)* %p, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*)* @cubes, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
