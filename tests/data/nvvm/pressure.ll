; pressure: loads 64 floats and keeps them all alive until the end, so a
; small register limit (max_registers = 16) forces ptxas to spill.
; Generated (a loop written out); regenerate rather than edit by hand.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define void @pressure(float addrspace(1)* %x, float addrspace(1)* %y) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = mul i32 %t, 64
  %i0 = add i32 %b, 0
  %p0 = getelementptr float, float addrspace(1)* %x, i32 %i0
  %v0 = load volatile float, float addrspace(1)* %p0, align 4
  %i1 = add i32 %b, 1
  %p1 = getelementptr float, float addrspace(1)* %x, i32 %i1
  %v1 = load volatile float, float addrspace(1)* %p1, align 4
  %i2 = add i32 %b, 2
  %p2 = getelementptr float, float addrspace(1)* %x, i32 %i2
  %v2 = load volatile float, float addrspace(1)* %p2, align 4
  %i3 = add i32 %b, 3
  %p3 = getelementptr float, float addrspace(1)* %x, i32 %i3
  %v3 = load volatile float, float addrspace(1)* %p3, align 4
  %i4 = add i32 %b, 4
  %p4 = getelementptr float, float addrspace(1)* %x, i32 %i4
  %v4 = load volatile float, float addrspace(1)* %p4, align 4
  %i5 = add i32 %b, 5
  %p5 = getelementptr float, float addrspace(1)* %x, i32 %i5
  %v5 = load volatile float, float addrspace(1)* %p5, align 4
  %i6 = add i32 %b, 6
  %p6 = getelementptr float, float addrspace(1)* %x, i32 %i6
  %v6 = load volatile float, float addrspace(1)* %p6, align 4
  %i7 = add i32 %b, 7
  %p7 = getelementptr float, float addrspace(1)* %x, i32 %i7
  %v7 = load volatile float, float addrspace(1)* %p7, align 4
  %i8 = add i32 %b, 8
  %p8 = getelementptr float, float addrspace(1)* %x, i32 %i8
  %v8 = load volatile float, float addrspace(1)* %p8, align 4
  %i9 = add i32 %b, 9
  %p9 = getelementptr float, float addrspace(1)* %x, i32 %i9
  %v9 = load volatile float, float addrspace(1)* %p9, align 4
  %i10 = add i32 %b, 10
  %p10 = getelementptr float, float addrspace(1)* %x, i32 %i10
  %v10 = load volatile float, float addrspace(1)* %p10, align 4
  %i11 = add i32 %b, 11
  %p11 = getelementptr float, float addrspace(1)* %x, i32 %i11
  %v11 = load volatile float, float addrspace(1)* %p11, align 4
  %i12 = add i32 %b, 12
  %p12 = getelementptr float, float addrspace(1)* %x, i32 %i12
  %v12 = load volatile float, float addrspace(1)* %p12, align 4
  %i13 = add i32 %b, 13
  %p13 = getelementptr float, float addrspace(1)* %x, i32 %i13
  %v13 = load volatile float, float addrspace(1)* %p13, align 4
  %i14 = add i32 %b, 14
  %p14 = getelementptr float, float addrspace(1)* %x, i32 %i14
  %v14 = load volatile float, float addrspace(1)* %p14, align 4
  %i15 = add i32 %b, 15
  %p15 = getelementptr float, float addrspace(1)* %x, i32 %i15
  %v15 = load volatile float, float addrspace(1)* %p15, align 4
  %i16 = add i32 %b, 16
  %p16 = getelementptr float, float addrspace(1)* %x, i32 %i16
  %v16 = load volatile float, float addrspace(1)* %p16, align 4
  %i17 = add i32 %b, 17
  %p17 = getelementptr float, float addrspace(1)* %x, i32 %i17
  %v17 = load volatile float, float addrspace(1)* %p17, align 4
  %i18 = add i32 %b, 18
  %p18 = getelementptr float, float addrspace(1)* %x, i32 %i18
  %v18 = load volatile float, float addrspace(1)* %p18, align 4
  %i19 = add i32 %b, 19
  %p19 = getelementptr float, float addrspace(1)* %x, i32 %i19
  %v19 = load volatile float, float addrspace(1)* %p19, align 4
  %i20 = add i32 %b, 20
  %p20 = getelementptr float, float addrspace(1)* %x, i32 %i20
  %v20 = load volatile float, float addrspace(1)* %p20, align 4
  %i21 = add i32 %b, 21
  %p21 = getelementptr float, float addrspace(1)* %x, i32 %i21
  %v21 = load volatile float, float addrspace(1)* %p21, align 4
  %i22 = add i32 %b, 22
  %p22 = getelementptr float, float addrspace(1)* %x, i32 %i22
  %v22 = load volatile float, float addrspace(1)* %p22, align 4
  %i23 = add i32 %b, 23
  %p23 = getelementptr float, float addrspace(1)* %x, i32 %i23
  %v23 = load volatile float, float addrspace(1)* %p23, align 4
  %i24 = add i32 %b, 24
  %p24 = getelementptr float, float addrspace(1)* %x, i32 %i24
  %v24 = load volatile float, float addrspace(1)* %p24, align 4
  %i25 = add i32 %b, 25
  %p25 = getelementptr float, float addrspace(1)* %x, i32 %i25
  %v25 = load volatile float, float addrspace(1)* %p25, align 4
  %i26 = add i32 %b, 26
  %p26 = getelementptr float, float addrspace(1)* %x, i32 %i26
  %v26 = load volatile float, float addrspace(1)* %p26, align 4
  %i27 = add i32 %b, 27
  %p27 = getelementptr float, float addrspace(1)* %x, i32 %i27
  %v27 = load volatile float, float addrspace(1)* %p27, align 4
  %i28 = add i32 %b, 28
  %p28 = getelementptr float, float addrspace(1)* %x, i32 %i28
  %v28 = load volatile float, float addrspace(1)* %p28, align 4
  %i29 = add i32 %b, 29
  %p29 = getelementptr float, float addrspace(1)* %x, i32 %i29
  %v29 = load volatile float, float addrspace(1)* %p29, align 4
  %i30 = add i32 %b, 30
  %p30 = getelementptr float, float addrspace(1)* %x, i32 %i30
  %v30 = load volatile float, float addrspace(1)* %p30, align 4
  %i31 = add i32 %b, 31
  %p31 = getelementptr float, float addrspace(1)* %x, i32 %i31
  %v31 = load volatile float, float addrspace(1)* %p31, align 4
  %i32 = add i32 %b, 32
  %p32 = getelementptr float, float addrspace(1)* %x, i32 %i32
  %v32 = load volatile float, float addrspace(1)* %p32, align 4
  %i33 = add i32 %b, 33
  %p33 = getelementptr float, float addrspace(1)* %x, i32 %i33
  %v33 = load volatile float, float addrspace(1)* %p33, align 4
  %i34 = add i32 %b, 34
  %p34 = getelementptr float, float addrspace(1)* %x, i32 %i34
  %v34 = load volatile float, float addrspace(1)* %p34, align 4
  %i35 = add i32 %b, 35
  %p35 = getelementptr float, float addrspace(1)* %x, i32 %i35
  %v35 = load volatile float, float addrspace(1)* %p35, align 4
  %i36 = add i32 %b, 36
  %p36 = getelementptr float, float addrspace(1)* %x, i32 %i36
  %v36 = load volatile float, float addrspace(1)* %p36, align 4
  %i37 = add i32 %b, 37
  %p37 = getelementptr float, float addrspace(1)* %x, i32 %i37
  %v37 = load volatile float, float addrspace(1)* %p37, align 4
  %i38 = add i32 %b, 38
  %p38 = getelementptr float, float addrspace(1)* %x, i32 %i38
  %v38 = load volatile float, float addrspace(1)* %p38, align 4
  %i39 = add i32 %b, 39
  %p39 = getelementptr float, float addrspace(1)* %x, i32 %i39
  %v39 = load volatile float, float addrspace(1)* %p39, align 4
  %i40 = add i32 %b, 40
  %p40 = getelementptr float, float addrspace(1)* %x, i32 %i40
  %v40 = load volatile float, float addrspace(1)* %p40, align 4
  %i41 = add i32 %b, 41
  %p41 = getelementptr float, float addrspace(1)* %x, i32 %i41
  %v41 = load volatile float, float addrspace(1)* %p41, align 4
  %i42 = add i32 %b, 42
  %p42 = getelementptr float, float addrspace(1)* %x, i32 %i42
  %v42 = load volatile float, float addrspace(1)* %p42, align 4
  %i43 = add i32 %b, 43
  %p43 = getelementptr float, float addrspace(1)* %x, i32 %i43
  %v43 = load volatile float, float addrspace(1)* %p43, align 4
  %i44 = add i32 %b, 44
  %p44 = getelementptr float, float addrspace(1)* %x, i32 %i44
  %v44 = load volatile float, float addrspace(1)* %p44, align 4
  %i45 = add i32 %b, 45
  %p45 = getelementptr float, float addrspace(1)* %x, i32 %i45
  %v45 = load volatile float, float addrspace(1)* %p45, align 4
  %i46 = add i32 %b, 46
  %p46 = getelementptr float, float addrspace(1)* %x, i32 %i46
  %v46 = load volatile float, float addrspace(1)* %p46, align 4
  %i47 = add i32 %b, 47
  %p47 = getelementptr float, float addrspace(1)* %x, i32 %i47
  %v47 = load volatile float, float addrspace(1)* %p47, align 4
  %i48 = add i32 %b, 48
  %p48 = getelementptr float, float addrspace(1)* %x, i32 %i48
  %v48 = load volatile float, float addrspace(1)* %p48, align 4
  %i49 = add i32 %b, 49
  %p49 = getelementptr float, float addrspace(1)* %x, i32 %i49
  %v49 = load volatile float, float addrspace(1)* %p49, align 4
  %i50 = add i32 %b, 50
  %p50 = getelementptr float, float addrspace(1)* %x, i32 %i50
  %v50 = load volatile float, float addrspace(1)* %p50, align 4
  %i51 = add i32 %b, 51
  %p51 = getelementptr float, float addrspace(1)* %x, i32 %i51
  %v51 = load volatile float, float addrspace(1)* %p51, align 4
  %i52 = add i32 %b, 52
  %p52 = getelementptr float, float addrspace(1)* %x, i32 %i52
  %v52 = load volatile float, float addrspace(1)* %p52, align 4
  %i53 = add i32 %b, 53
  %p53 = getelementptr float, float addrspace(1)* %x, i32 %i53
  %v53 = load volatile float, float addrspace(1)* %p53, align 4
  %i54 = add i32 %b, 54
  %p54 = getelementptr float, float addrspace(1)* %x, i32 %i54
  %v54 = load volatile float, float addrspace(1)* %p54, align 4
  %i55 = add i32 %b, 55
  %p55 = getelementptr float, float addrspace(1)* %x, i32 %i55
  %v55 = load volatile float, float addrspace(1)* %p55, align 4
  %i56 = add i32 %b, 56
  %p56 = getelementptr float, float addrspace(1)* %x, i32 %i56
  %v56 = load volatile float, float addrspace(1)* %p56, align 4
  %i57 = add i32 %b, 57
  %p57 = getelementptr float, float addrspace(1)* %x, i32 %i57
  %v57 = load volatile float, float addrspace(1)* %p57, align 4
  %i58 = add i32 %b, 58
  %p58 = getelementptr float, float addrspace(1)* %x, i32 %i58
  %v58 = load volatile float, float addrspace(1)* %p58, align 4
  %i59 = add i32 %b, 59
  %p59 = getelementptr float, float addrspace(1)* %x, i32 %i59
  %v59 = load volatile float, float addrspace(1)* %p59, align 4
  %i60 = add i32 %b, 60
  %p60 = getelementptr float, float addrspace(1)* %x, i32 %i60
  %v60 = load volatile float, float addrspace(1)* %p60, align 4
  %i61 = add i32 %b, 61
  %p61 = getelementptr float, float addrspace(1)* %x, i32 %i61
  %v61 = load volatile float, float addrspace(1)* %p61, align 4
  %i62 = add i32 %b, 62
  %p62 = getelementptr float, float addrspace(1)* %x, i32 %i62
  %v62 = load volatile float, float addrspace(1)* %p62, align 4
  %i63 = add i32 %b, 63
  %p63 = getelementptr float, float addrspace(1)* %x, i32 %i63
  %v63 = load volatile float, float addrspace(1)* %p63, align 4
  %s0 = fmul float %v0, %v3
  %q0 = getelementptr float, float addrspace(1)* %y, i32 %i63
  store volatile float %s0, float addrspace(1)* %q0, align 4
  %s1 = fmul float %v1, %v10
  %q1 = getelementptr float, float addrspace(1)* %y, i32 %i62
  store volatile float %s1, float addrspace(1)* %q1, align 4
  %s2 = fmul float %v2, %v17
  %q2 = getelementptr float, float addrspace(1)* %y, i32 %i61
  store volatile float %s2, float addrspace(1)* %q2, align 4
  %s3 = fmul float %v3, %v24
  %q3 = getelementptr float, float addrspace(1)* %y, i32 %i60
  store volatile float %s3, float addrspace(1)* %q3, align 4
  %s4 = fmul float %v4, %v31
  %q4 = getelementptr float, float addrspace(1)* %y, i32 %i59
  store volatile float %s4, float addrspace(1)* %q4, align 4
  %s5 = fmul float %v5, %v38
  %q5 = getelementptr float, float addrspace(1)* %y, i32 %i58
  store volatile float %s5, float addrspace(1)* %q5, align 4
  %s6 = fmul float %v6, %v45
  %q6 = getelementptr float, float addrspace(1)* %y, i32 %i57
  store volatile float %s6, float addrspace(1)* %q6, align 4
  %s7 = fmul float %v7, %v52
  %q7 = getelementptr float, float addrspace(1)* %y, i32 %i56
  store volatile float %s7, float addrspace(1)* %q7, align 4
  %s8 = fmul float %v8, %v59
  %q8 = getelementptr float, float addrspace(1)* %y, i32 %i55
  store volatile float %s8, float addrspace(1)* %q8, align 4
  %s9 = fmul float %v9, %v2
  %q9 = getelementptr float, float addrspace(1)* %y, i32 %i54
  store volatile float %s9, float addrspace(1)* %q9, align 4
  %s10 = fmul float %v10, %v9
  %q10 = getelementptr float, float addrspace(1)* %y, i32 %i53
  store volatile float %s10, float addrspace(1)* %q10, align 4
  %s11 = fmul float %v11, %v16
  %q11 = getelementptr float, float addrspace(1)* %y, i32 %i52
  store volatile float %s11, float addrspace(1)* %q11, align 4
  %s12 = fmul float %v12, %v23
  %q12 = getelementptr float, float addrspace(1)* %y, i32 %i51
  store volatile float %s12, float addrspace(1)* %q12, align 4
  %s13 = fmul float %v13, %v30
  %q13 = getelementptr float, float addrspace(1)* %y, i32 %i50
  store volatile float %s13, float addrspace(1)* %q13, align 4
  %s14 = fmul float %v14, %v37
  %q14 = getelementptr float, float addrspace(1)* %y, i32 %i49
  store volatile float %s14, float addrspace(1)* %q14, align 4
  %s15 = fmul float %v15, %v44
  %q15 = getelementptr float, float addrspace(1)* %y, i32 %i48
  store volatile float %s15, float addrspace(1)* %q15, align 4
  %s16 = fmul float %v16, %v51
  %q16 = getelementptr float, float addrspace(1)* %y, i32 %i47
  store volatile float %s16, float addrspace(1)* %q16, align 4
  %s17 = fmul float %v17, %v58
  %q17 = getelementptr float, float addrspace(1)* %y, i32 %i46
  store volatile float %s17, float addrspace(1)* %q17, align 4
  %s18 = fmul float %v18, %v1
  %q18 = getelementptr float, float addrspace(1)* %y, i32 %i45
  store volatile float %s18, float addrspace(1)* %q18, align 4
  %s19 = fmul float %v19, %v8
  %q19 = getelementptr float, float addrspace(1)* %y, i32 %i44
  store volatile float %s19, float addrspace(1)* %q19, align 4
  %s20 = fmul float %v20, %v15
  %q20 = getelementptr float, float addrspace(1)* %y, i32 %i43
  store volatile float %s20, float addrspace(1)* %q20, align 4
  %s21 = fmul float %v21, %v22
  %q21 = getelementptr float, float addrspace(1)* %y, i32 %i42
  store volatile float %s21, float addrspace(1)* %q21, align 4
  %s22 = fmul float %v22, %v29
  %q22 = getelementptr float, float addrspace(1)* %y, i32 %i41
  store volatile float %s22, float addrspace(1)* %q22, align 4
  %s23 = fmul float %v23, %v36
  %q23 = getelementptr float, float addrspace(1)* %y, i32 %i40
  store volatile float %s23, float addrspace(1)* %q23, align 4
  %s24 = fmul float %v24, %v43
  %q24 = getelementptr float, float addrspace(1)* %y, i32 %i39
  store volatile float %s24, float addrspace(1)* %q24, align 4
  %s25 = fmul float %v25, %v50
  %q25 = getelementptr float, float addrspace(1)* %y, i32 %i38
  store volatile float %s25, float addrspace(1)* %q25, align 4
  %s26 = fmul float %v26, %v57
  %q26 = getelementptr float, float addrspace(1)* %y, i32 %i37
  store volatile float %s26, float addrspace(1)* %q26, align 4
  %s27 = fmul float %v27, %v0
  %q27 = getelementptr float, float addrspace(1)* %y, i32 %i36
  store volatile float %s27, float addrspace(1)* %q27, align 4
  %s28 = fmul float %v28, %v7
  %q28 = getelementptr float, float addrspace(1)* %y, i32 %i35
  store volatile float %s28, float addrspace(1)* %q28, align 4
  %s29 = fmul float %v29, %v14
  %q29 = getelementptr float, float addrspace(1)* %y, i32 %i34
  store volatile float %s29, float addrspace(1)* %q29, align 4
  %s30 = fmul float %v30, %v21
  %q30 = getelementptr float, float addrspace(1)* %y, i32 %i33
  store volatile float %s30, float addrspace(1)* %q30, align 4
  %s31 = fmul float %v31, %v28
  %q31 = getelementptr float, float addrspace(1)* %y, i32 %i32
  store volatile float %s31, float addrspace(1)* %q31, align 4
  %s32 = fmul float %v32, %v35
  %q32 = getelementptr float, float addrspace(1)* %y, i32 %i31
  store volatile float %s32, float addrspace(1)* %q32, align 4
  %s33 = fmul float %v33, %v42
  %q33 = getelementptr float, float addrspace(1)* %y, i32 %i30
  store volatile float %s33, float addrspace(1)* %q33, align 4
  %s34 = fmul float %v34, %v49
  %q34 = getelementptr float, float addrspace(1)* %y, i32 %i29
  store volatile float %s34, float addrspace(1)* %q34, align 4
  %s35 = fmul float %v35, %v56
  %q35 = getelementptr float, float addrspace(1)* %y, i32 %i28
  store volatile float %s35, float addrspace(1)* %q35, align 4
  %s36 = fmul float %v36, %v63
  %q36 = getelementptr float, float addrspace(1)* %y, i32 %i27
  store volatile float %s36, float addrspace(1)* %q36, align 4
  %s37 = fmul float %v37, %v6
  %q37 = getelementptr float, float addrspace(1)* %y, i32 %i26
  store volatile float %s37, float addrspace(1)* %q37, align 4
  %s38 = fmul float %v38, %v13
  %q38 = getelementptr float, float addrspace(1)* %y, i32 %i25
  store volatile float %s38, float addrspace(1)* %q38, align 4
  %s39 = fmul float %v39, %v20
  %q39 = getelementptr float, float addrspace(1)* %y, i32 %i24
  store volatile float %s39, float addrspace(1)* %q39, align 4
  %s40 = fmul float %v40, %v27
  %q40 = getelementptr float, float addrspace(1)* %y, i32 %i23
  store volatile float %s40, float addrspace(1)* %q40, align 4
  %s41 = fmul float %v41, %v34
  %q41 = getelementptr float, float addrspace(1)* %y, i32 %i22
  store volatile float %s41, float addrspace(1)* %q41, align 4
  %s42 = fmul float %v42, %v41
  %q42 = getelementptr float, float addrspace(1)* %y, i32 %i21
  store volatile float %s42, float addrspace(1)* %q42, align 4
  %s43 = fmul float %v43, %v48
  %q43 = getelementptr float, float addrspace(1)* %y, i32 %i20
  store volatile float %s43, float addrspace(1)* %q43, align 4
  %s44 = fmul float %v44, %v55
  %q44 = getelementptr float, float addrspace(1)* %y, i32 %i19
  store volatile float %s44, float addrspace(1)* %q44, align 4
  %s45 = fmul float %v45, %v62
  %q45 = getelementptr float, float addrspace(1)* %y, i32 %i18
  store volatile float %s45, float addrspace(1)* %q45, align 4
  %s46 = fmul float %v46, %v5
  %q46 = getelementptr float, float addrspace(1)* %y, i32 %i17
  store volatile float %s46, float addrspace(1)* %q46, align 4
  %s47 = fmul float %v47, %v12
  %q47 = getelementptr float, float addrspace(1)* %y, i32 %i16
  store volatile float %s47, float addrspace(1)* %q47, align 4
  %s48 = fmul float %v48, %v19
  %q48 = getelementptr float, float addrspace(1)* %y, i32 %i15
  store volatile float %s48, float addrspace(1)* %q48, align 4
  %s49 = fmul float %v49, %v26
  %q49 = getelementptr float, float addrspace(1)* %y, i32 %i14
  store volatile float %s49, float addrspace(1)* %q49, align 4
  %s50 = fmul float %v50, %v33
  %q50 = getelementptr float, float addrspace(1)* %y, i32 %i13
  store volatile float %s50, float addrspace(1)* %q50, align 4
  %s51 = fmul float %v51, %v40
  %q51 = getelementptr float, float addrspace(1)* %y, i32 %i12
  store volatile float %s51, float addrspace(1)* %q51, align 4
  %s52 = fmul float %v52, %v47
  %q52 = getelementptr float, float addrspace(1)* %y, i32 %i11
  store volatile float %s52, float addrspace(1)* %q52, align 4
  %s53 = fmul float %v53, %v54
  %q53 = getelementptr float, float addrspace(1)* %y, i32 %i10
  store volatile float %s53, float addrspace(1)* %q53, align 4
  %s54 = fmul float %v54, %v61
  %q54 = getelementptr float, float addrspace(1)* %y, i32 %i9
  store volatile float %s54, float addrspace(1)* %q54, align 4
  %s55 = fmul float %v55, %v4
  %q55 = getelementptr float, float addrspace(1)* %y, i32 %i8
  store volatile float %s55, float addrspace(1)* %q55, align 4
  %s56 = fmul float %v56, %v11
  %q56 = getelementptr float, float addrspace(1)* %y, i32 %i7
  store volatile float %s56, float addrspace(1)* %q56, align 4
  %s57 = fmul float %v57, %v18
  %q57 = getelementptr float, float addrspace(1)* %y, i32 %i6
  store volatile float %s57, float addrspace(1)* %q57, align 4
  %s58 = fmul float %v58, %v25
  %q58 = getelementptr float, float addrspace(1)* %y, i32 %i5
  store volatile float %s58, float addrspace(1)* %q58, align 4
  %s59 = fmul float %v59, %v32
  %q59 = getelementptr float, float addrspace(1)* %y, i32 %i4
  store volatile float %s59, float addrspace(1)* %q59, align 4
  %s60 = fmul float %v60, %v39
  %q60 = getelementptr float, float addrspace(1)* %y, i32 %i3
  store volatile float %s60, float addrspace(1)* %q60, align 4
  %s61 = fmul float %v61, %v46
  %q61 = getelementptr float, float addrspace(1)* %y, i32 %i2
  store volatile float %s61, float addrspace(1)* %q61, align 4
  %s62 = fmul float %v62, %v53
  %q62 = getelementptr float, float addrspace(1)* %y, i32 %i1
  store volatile float %s62, float addrspace(1)* %q62, align 4
  %s63 = fmul float %v63, %v60
  %q63 = getelementptr float, float addrspace(1)* %y, i32 %i0
  store volatile float %s63, float addrspace(1)* %q63, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*, float addrspace(1)*)* @pressure, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
