; One warp: ldmatrix.x4 (A) and .x2 (B) from shared memory, one mma.sync
; m16n8k16 f16 -> f32, the four accumulators stored to global memory.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile = internal addrspace(3) global [1024 x i8] undef, align 128

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define void @mma_tile(float addrspace(1)* %out) {
entry:
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %base = ptrtoint [1024 x i8] addrspace(3)* @tile to i32
  %row = shl i32 %lane, 4
  %pa = add i32 %base, %row
  %pb = add i32 %pa, 512
  %a = call {i32, i32, i32, i32} asm sideeffect "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,r"(i32 %pa)
  %a0 = extractvalue {i32, i32, i32, i32} %a, 0
  %a1 = extractvalue {i32, i32, i32, i32} %a, 1
  %a2 = extractvalue {i32, i32, i32, i32} %a, 2
  %a3 = extractvalue {i32, i32, i32, i32} %a, 3
  %b = call {i32, i32} asm sideeffect "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0, $1}, [$2];", "=r,=r,r"(i32 %pb)
  %b0 = extractvalue {i32, i32} %b, 0
  %b1 = extractvalue {i32, i32} %b, 1
  %d = call {float, float, float, float} asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"(i32 %a0, i32 %a1, i32 %a2, i32 %a3, i32 %b0, i32 %b1, float 0.0, float 0.0, float 0.0, float 0.0)
  %d0 = extractvalue {float, float, float, float} %d, 0
  %d1 = extractvalue {float, float, float, float} %d, 1
  %d2 = extractvalue {float, float, float, float} %d, 2
  %d3 = extractvalue {float, float, float, float} %d, 3
  %o4 = shl i32 %lane, 2
  %p0 = getelementptr float, float addrspace(1)* %out, i32 %o4
  %pv = bitcast float addrspace(1)* %p0 to <4 x float> addrspace(1)*
  %v0 = insertelement <4 x float> undef, float %d0, i32 0
  %v1 = insertelement <4 x float> %v0, float %d1, i32 1
  %v2 = insertelement <4 x float> %v1, float %d2, i32 2
  %v3 = insertelement <4 x float> %v2, float %d3, i32 3
  store <4 x float> %v3, <4 x float> addrspace(1)* %pv, align 16
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*)* @mma_tile, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
