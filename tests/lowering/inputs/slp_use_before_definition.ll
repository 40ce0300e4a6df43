; ModuleID = ""
target triple = "x86_64-unknown-linux-gnu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

@"__tidu_const_1" = internal constant [2 x i64] [i64 1, i64 0]
@"__tidu_const_2" = internal constant [20 x double] [double 0x3fe6e3cf112eeb5c, double 0x3fe52074fcbb0af4, double 0x3ff1ccf653fdb81c, double 0x3fe167f911e3abbb, double 0x3fe1244af7ce3b76, double 0x3ff03cfc0f4243d2, double 0x3feeeb28e5ff0c68, double 0x3ff6acb81d6cef65, double 0x3ff2114f8c8d2ce8, double 0x3ff039d36ce70ff7, double 0x3fefe6631e688548, double 0x3fe7eba469ec23d9, double 0x3fe0609ddd3fc8b7, double 0x3fe628288a831c33, double 0x3ff3129045ef8119, double 0x3fe66b5ecadc380f, double 0x3febd33dd017123c, double 0x3fe01e9745efa601, double 0x3ff547e020d9e174, double 0x3fe4f1585d753cf1]
@"__tidu_const_3" = internal constant [2 x i64] [i64 15, i64 5]
define void @"vjp"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3")
{
.5:
  %".94" = alloca double, i64 2, align 64
  %".95" = bitcast double* %".94" to ptr
  br label %".6"
.6:
  %".72" = phi  i64 [0, %".5"], [%".107", %".10"]
  %".97" = icmp slt i64 %".72", 2
  br i1 %".97", label %".7", label %".11"
.7:
  br label %".8"
.8:
  %".73" = phi  i64 [0, %".7"], [%".105", %".9"]
  %".100" = icmp slt i64 %".73", 1
  br i1 %".100", label %".9", label %".10"
.9:
  %".102" = add nsw i64 %".72", %".73"
  %".103" = getelementptr inbounds double, ptr %".95", i64 %".102"
  store double              0x0, ptr %".103"
  %".105" = add i64 %".73", 1
  br label %".8"
.10:
  %".107" = add i64 %".72", 1
  br label %".6"
.11:
  %".109" = alloca double, i64 2, align 64
  %".110" = bitcast double* %".109" to ptr
  br label %".12"
.12:
  %".74" = phi  i64 [0, %".11"], [%".128", %".16"]
  %".112" = icmp slt i64 %".74", 2
  br i1 %".112", label %".13", label %".17"
.13:
  br label %".14"
.14:
  %".75" = phi  i64 [0, %".13"], [%".126", %".15"]
  %".115" = icmp slt i64 %".75", 1
  br i1 %".115", label %".15", label %".16"
.15:
  %".117" = mul i64 %".74", 2
  %".118" = add i64 %".117", 1
  %".119" = mul nsw i64 %".118", 5
  %".120" = add nsw i64 %".119", %".75"
  %".121" = getelementptr inbounds double, ptr %".1", i64 %".120"
  %".122" = load double, ptr %".121"
  %".123" = add nsw i64 %".74", %".75"
  %".124" = getelementptr inbounds double, ptr %".110", i64 %".123"
  store double %".122", ptr %".124"
  %".126" = add i64 %".75", 1
  br label %".14"
.16:
  %".128" = add i64 %".74", 1
  br label %".12"
.17:
  %".130" = bitcast [2 x i64]* @"__tidu_const_1" to ptr
  %".131" = alloca double, i64 2, align 64
  %".132" = bitcast double* %".131" to ptr
  br label %".18"
.18:
  %".76" = phi  i64 [0, %".17"], [%".154", %".22"]
  %".134" = icmp slt i64 %".76", 2
  br i1 %".134", label %".19", label %".23"
.19:
  %".136" = getelementptr inbounds i64, ptr %".130", i64 %".76"
  %".137" = load i64, ptr %".136"
  %".138" = icmp slt i64 %".137", 0
  %".139" = add i64 %".137", 2
  %".140" = select  i1 %".138", i64 %".139", i64 %".137"
  %".141" = call i64 @"llvm.smax.i64"(i64 %".140", i64 0)
  %".142" = call i64 @"llvm.smin.i64"(i64 %".141", i64 1)
  br label %".20"
.20:
  %".77" = phi  i64 [0, %".19"], [%".152", %".21"]
  %".144" = icmp slt i64 %".77", 1
  br i1 %".144", label %".21", label %".22"
.21:
  %".146" = add nsw i64 %".142", %".77"
  %".147" = getelementptr inbounds double, ptr %".110", i64 %".146"
  %".148" = load double, ptr %".147"
  %".149" = add nsw i64 %".76", %".77"
  %".150" = getelementptr inbounds double, ptr %".132", i64 %".149"
  store double %".148", ptr %".150"
  %".152" = add i64 %".77", 1
  br label %".20"
.22:
  %".154" = add i64 %".76", 1
  br label %".18"
.23:
  %".156" = alloca double, i64 20, align 64
  %".157" = bitcast double* %".156" to ptr
  %".158" = bitcast [20 x double]* @"__tidu_const_2" to ptr
  br label %".24"
.24:
  %".78" = phi  i64 [0, %".23"], [%".177", %".28"]
  %".160" = icmp slt i64 %".78", 4
  br i1 %".160", label %".25", label %".29"
.25:
  br label %".26"
.26:
  %".79" = phi  i64 [0, %".25"], [%".175", %".27"]
  %".163" = icmp slt i64 %".79", 5
  br i1 %".163", label %".27", label %".28"
.27:
  %".165" = load double, ptr %".2"
  %".166" = mul nsw i64 %".78", 5
  %".167" = add nsw i64 %".166", %".79"
  %".168" = getelementptr inbounds double, ptr %".158", i64 %".167"
  %".169" = load double, ptr %".168"
  %".170" = fmul contract double %".169", %".165"
  %".171" = mul nsw i64 %".78", 5
  %".172" = add nsw i64 %".171", %".79"
  %".173" = getelementptr inbounds double, ptr %".157", i64 %".172"
  store double %".170", ptr %".173"
  %".175" = add i64 %".79", 1
  br label %".26"
.28:
  %".177" = add i64 %".78", 1
  br label %".24"
.29:
  %".179" = bitcast [2 x i64]* @"__tidu_const_3" to ptr
  %".180" = alloca double, i64 2, align 64
  %".181" = bitcast double* %".180" to ptr
  br label %".30"
.30:
  %".80" = phi  i64 [0, %".29"], [%".196", %".31"]
  %".183" = icmp slt i64 %".80", 2
  br i1 %".183", label %".31", label %".32"
.31:
  %".185" = getelementptr inbounds i64, ptr %".179", i64 %".80"
  %".186" = load i64, ptr %".185"
  %".187" = icmp slt i64 %".186", 0
  %".188" = add i64 %".186", 20
  %".189" = select  i1 %".187", i64 %".188", i64 %".186"
  %".190" = call i64 @"llvm.smax.i64"(i64 %".189", i64 0)
  %".191" = call i64 @"llvm.smin.i64"(i64 %".190", i64 19)
  %".192" = getelementptr inbounds double, ptr %".157", i64 %".191"
  %".193" = load double, ptr %".192"
  %".194" = getelementptr inbounds double, ptr %".181", i64 %".80"
  store double %".193", ptr %".194"
  %".196" = add i64 %".80", 1
  br label %".30"
.32:
  %".198" = alloca double, i64 2, align 64
  %".199" = bitcast double* %".198" to ptr
  %".200" = alloca double, i64 2, align 64
  %".201" = bitcast double* %".200" to ptr
  br label %".33"
.33:
  %".81" = phi  i64 [0, %".32"], [%".218", %".34"]
  %".203" = icmp slt i64 %".81", 2
  br i1 %".203", label %".34", label %".35"
.34:
  %".205" = getelementptr inbounds double, ptr %".132", i64 %".81"
  %".206" = load double, ptr %".205"
  %".207" = fcmp olt double %".206",              0x0
  %".208" = fcmp oeq double %".206",              0x0
  %".209" = select  i1 %".208", double 0x3fe0000000000000, double              0x0
  %".210" = select  i1 %".207", double 0x3ff0000000000000, double %".209"
  %".211" = getelementptr inbounds double, ptr %".181", i64 %".81"
  %".212" = load double, ptr %".211"
  %".213" = fmul contract double %".210", %".212"
  %".214" = getelementptr inbounds double, ptr %".199", i64 %".81"
  store double              0x0, ptr %".214"
  %".216" = getelementptr inbounds double, ptr %".201", i64 %".81"
  store double %".213", ptr %".216"
  %".218" = add i64 %".81", 1
  br label %".33"
.35:
  %".220" = alloca double, i64 2, align 64
  %".221" = bitcast double* %".220" to ptr
  br label %".36"
.36:
  %".82" = phi  i64 [0, %".35"], [%".236", %".40"]
  %".223" = icmp slt i64 %".82", 2
  br i1 %".223", label %".37", label %".41"
.37:
  br label %".38"
.38:
  %".83" = phi  i64 [0, %".37"], [%".234", %".39"]
  %".226" = icmp slt i64 %".83", 1
  br i1 %".226", label %".39", label %".40"
.39:
  %".228" = add nsw i64 %".82", %".83"
  %".229" = getelementptr inbounds double, ptr %".95", i64 %".228"
  %".230" = load double, ptr %".229"
  %".231" = add nsw i64 %".82", %".83"
  %".232" = getelementptr inbounds double, ptr %".221", i64 %".231"
  store double %".230", ptr %".232"
  %".234" = add i64 %".83", 1
  br label %".38"
.40:
  %".236" = add i64 %".82", 1
  br label %".36"
.41:
  br label %".42"
.42:
  %".84" = phi  i64 [0, %".41"], [%".263", %".46"]
  %".239" = icmp slt i64 %".84", 2
  br i1 %".239", label %".43", label %".47"
.43:
  %".241" = getelementptr inbounds i64, ptr %".130", i64 %".84"
  %".242" = load i64, ptr %".241"
  %".243" = icmp slt i64 %".242", 0
  %".244" = add i64 %".242", 2
  %".245" = select  i1 %".243", i64 %".244", i64 %".242"
  %".246" = call i64 @"llvm.smax.i64"(i64 %".245", i64 0)
  %".247" = call i64 @"llvm.smin.i64"(i64 %".246", i64 1)
  br label %".44"
.44:
  %".85" = phi  i64 [0, %".43"], [%".261", %".45"]
  %".249" = icmp slt i64 %".85", 1
  br i1 %".249", label %".45", label %".46"
.45:
  %".251" = add nsw i64 %".84", %".85"
  %".252" = getelementptr inbounds double, ptr %".201", i64 %".251"
  %".253" = load double, ptr %".252"
  %".254" = add nsw i64 %".247", %".85"
  %".255" = getelementptr inbounds double, ptr %".221", i64 %".254"
  %".256" = load double, ptr %".255"
  %".257" = fadd contract double %".256", %".253"
  %".258" = add nsw i64 %".247", %".85"
  %".259" = getelementptr inbounds double, ptr %".221", i64 %".258"
  store double %".257", ptr %".259"
  %".261" = add i64 %".85", 1
  br label %".44"
.46:
  %".263" = add i64 %".84", 1
  br label %".42"
.47:
  %".265" = alloca double, i64 20, align 64
  %".266" = bitcast double* %".265" to ptr
  br label %".48"
.48:
  %".86" = phi  i64 [0, %".47"], [%".279", %".52"]
  %".268" = icmp slt i64 %".86", 4
  br i1 %".268", label %".49", label %".53"
.49:
  br label %".50"
.50:
  %".87" = phi  i64 [0, %".49"], [%".277", %".51"]
  %".271" = icmp slt i64 %".87", 5
  br i1 %".271", label %".51", label %".52"
.51:
  %".273" = mul nsw i64 %".86", 5
  %".274" = add nsw i64 %".273", %".87"
  %".275" = getelementptr inbounds double, ptr %".266", i64 %".274"
  store double              0x0, ptr %".275"
  %".277" = add i64 %".87", 1
  br label %".50"
.52:
  %".279" = add i64 %".86", 1
  br label %".48"
.53:
  br label %".54"
.54:
  %".88" = phi  i64 [0, %".53"], [%".298", %".58"]
  %".282" = icmp slt i64 %".88", 2
  br i1 %".282", label %".55", label %".59"
.55:
  br label %".56"
.56:
  %".89" = phi  i64 [0, %".55"], [%".296", %".57"]
  %".285" = icmp slt i64 %".89", 1
  br i1 %".285", label %".57", label %".58"
.57:
  %".287" = mul i64 %".88", 2
  %".288" = add i64 %".287", 1
  %".289" = add nsw i64 %".88", %".89"
  %".290" = getelementptr inbounds double, ptr %".221", i64 %".289"
  %".291" = load double, ptr %".290"
  %".292" = mul nsw i64 %".288", 5
  %".293" = add nsw i64 %".292", %".89"
  %".294" = getelementptr inbounds double, ptr %".266", i64 %".293"
  store double %".291", ptr %".294"
  %".296" = add i64 %".89", 1
  br label %".56"
.58:
  %".298" = add i64 %".88", 1
  br label %".54"
.59:
  %".300" = alloca double, i64 20, align 64
  %".301" = bitcast double* %".300" to ptr
  br label %".60"
.60:
  %".90" = phi  i64 [0, %".59"], [%".309", %".61"]
  %".303" = icmp slt i64 %".90", 20
  br i1 %".303", label %".61", label %".62"
.61:
  %".305" = getelementptr inbounds double, ptr %".157", i64 %".90"
  %".306" = load double, ptr %".305"
  %".307" = getelementptr inbounds double, ptr %".301", i64 %".90"
  store double %".306", ptr %".307"
  %".309" = add i64 %".90", 1
  br label %".60"
.62:
  br label %".63"
.63:
  %".91" = phi  i64 [0, %".62"], [%".325", %".64"]
  %".312" = icmp slt i64 %".91", 2
  br i1 %".312", label %".64", label %".65"
.64:
  %".314" = getelementptr inbounds i64, ptr %".179", i64 %".91"
  %".315" = load i64, ptr %".314"
  %".316" = icmp slt i64 %".315", 0
  %".317" = add i64 %".315", 20
  %".318" = select  i1 %".316", i64 %".317", i64 %".315"
  %".319" = call i64 @"llvm.smax.i64"(i64 %".318", i64 0)
  %".320" = call i64 @"llvm.smin.i64"(i64 %".319", i64 19)
  %".321" = getelementptr inbounds double, ptr %".199", i64 %".91"
  %".322" = load double, ptr %".321"
  %".323" = getelementptr inbounds double, ptr %".301", i64 %".320"
  store double %".322", ptr %".323"
  %".325" = add i64 %".91", 1
  br label %".63"
.65:
  br label %".66"
.66:
  %".92" = phi  i64 [0, %".65"], [%".348", %".70"]
  %".328" = icmp slt i64 %".92", 4
  br i1 %".328", label %".67", label %".71"
.67:
  br label %".68"
.68:
  %".93" = phi  i64 [0, %".67"], [%".346", %".69"]
  %".331" = icmp slt i64 %".93", 5
  br i1 %".331", label %".69", label %".70"
.69:
  %".333" = mul nsw i64 %".92", 5
  %".334" = add nsw i64 %".333", %".93"
  %".335" = getelementptr inbounds double, ptr %".266", i64 %".334"
  %".336" = load double, ptr %".335"
  %".337" = mul nsw i64 %".92", 5
  %".338" = add nsw i64 %".337", %".93"
  %".339" = getelementptr inbounds double, ptr %".301", i64 %".338"
  %".340" = load double, ptr %".339"
  %".341" = fadd contract double %".336", %".340"
  %".342" = mul nsw i64 %".92", 5
  %".343" = add nsw i64 %".342", %".93"
  %".344" = getelementptr inbounds double, ptr %".3", i64 %".343"
  store double %".341", ptr %".344"
  %".346" = add i64 %".93", 1
  br label %".68"
.70:
  %".348" = add i64 %".92", 1
  br label %".66"
.71:
  ret void
}

declare i64 @"llvm.smax.i64"(i64 %".1", i64 %".2")

declare i64 @"llvm.smin.i64"(i64 %".1", i64 %".2")
