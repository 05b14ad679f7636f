//! The `format`s xgrammar 0.2.8 knows, as `Grammar.from_regex` of its regex
//! for each prints them (its rules named `root`, `root_1`, … as in a grammar
//! of their own). Copied from xgrammar's output
//! (`str(xgrammar.Grammar.from_regex(regex))` with the regexes of its format
//! table) and checked against `Grammar.from_json_schema` for each format.

/// Each known format and the rules of its regex, one per line.
pub(super) const FORMATS: &[(&str, &str)] = &[
    (
        "email",
        r###"root ::= ((root_7 "@" [A-Za-z0-9] root_5 root_6))
root_1 ::= (([a-zA-Z0-9_!#$%&\'*+/=\?^`{|}~\-] root_1) | ([a-zA-Z0-9_!#$%&\'*+/=\?^`{|}~\-]))
root_2 ::= (([a-zA-Z0-9_!#$%&\'*+/=\?^`{|}~\-] root_2) | ([a-zA-Z0-9_!#$%&\'*+/=\?^`{|}~\-]))
root_3 ::= ("" | ("." root_2 root_3))
root_4 ::= ("" | (root_4_1 root_4))
root_5 ::= ("" | ([\-A-Za-z0-9]* [A-Za-z0-9]))
root_6 ::= ("" | ("." [A-Za-z0-9] [\-A-Za-z0-9]* [A-Za-z0-9] root_6))
root_7 ::= ((root_1 root_3) | ("\\" "\"" root_4 "\\" "\""))
root_4_1 ::= (("\\" [ -~]) | ([ !#-[\]-~]))"###,
    ),
    (
        "date",
        r###"root ::= ((root_1{4, 4} "-" root_2 "-" root_3))
root_1 ::= (([0-9]))
root_2 ::= (("0" [1-9]) | ("1" [0-2]))
root_3 ::= (("0" [1-9]) | ([1-2] [0-9]) | ("3" [01]))"###,
    ),
    (
        "time",
        r###"root ::= ((root_3 ":" [0-5] [0-9] ":" root_4 root_2 root_6))
root_1 ::= (([0-9] root_1) | ([0-9]))
root_2 ::= ("" | ("." root_1))
root_3 ::= (([01] [0-9]) | ("2" [0-3]))
root_4 ::= (([0-5] [0-9]) | ("6" "0"))
root_5 ::= (([01] [0-9]) | ("2" [0-3]))
root_6 ::= (("Z") | ([+\-] root_5 ":" [0-5] [0-9]))"###,
    ),
    (
        "date-time",
        r###"root ::= ((root_1{4, 4} "-" root_4 "-" root_5 "T" root_6 ":" [0-5] [0-9] ":" root_7 root_3 root_9))
root_1 ::= (([0-9]))
root_2 ::= (([0-9] root_2) | ([0-9]))
root_3 ::= ("" | ("." root_2))
root_4 ::= (("0" [1-9]) | ("1" [0-2]))
root_5 ::= (("0" [1-9]) | ([1-2] [0-9]) | ("3" [01]))
root_6 ::= (([01] [0-9]) | ("2" [0-3]))
root_7 ::= (([0-5] [0-9]) | ("6" "0"))
root_8 ::= (([01] [0-9]) | ("2" [0-3]))
root_9 ::= (("Z") | ([+\-] root_8 ":" [0-5] [0-9]))"###,
    ),
    (
        "duration",
        r###"root ::= (("P" root_32))
root_1 ::= (([0-9] root_1) | ([0-9]))
root_2 ::= (([0-9] root_2) | ([0-9]))
root_3 ::= (([0-9] root_3) | ([0-9]))
root_4 ::= ("" | (root_3 "D"))
root_5 ::= (([0-9] root_5) | ([0-9]))
root_6 ::= (([0-9] root_6) | ([0-9]))
root_7 ::= (([0-9] root_7) | ([0-9]))
root_8 ::= ("" | (root_7 "D"))
root_9 ::= ("" | (root_6 "M" root_8))
root_10 ::= (([0-9] root_10) | ([0-9]))
root_11 ::= (([0-9] root_11) | ([0-9]))
root_12 ::= (([0-9] root_12) | ([0-9]))
root_13 ::= ("" | (root_12 "S"))
root_14 ::= (([0-9] root_14) | ([0-9]))
root_15 ::= (([0-9] root_15) | ([0-9]))
root_16 ::= (([0-9] root_16) | ([0-9]))
root_17 ::= ("" | (root_16 "S"))
root_18 ::= ("" | (root_15 "M" root_17))
root_19 ::= ("" | ("T" root_19_1))
root_20 ::= (([0-9] root_20) | ([0-9]))
root_21 ::= (([0-9] root_21) | ([0-9]))
root_22 ::= (([0-9] root_22) | ([0-9]))
root_23 ::= ("" | (root_22 "S"))
root_24 ::= (([0-9] root_24) | ([0-9]))
root_25 ::= (([0-9] root_25) | ([0-9]))
root_26 ::= (([0-9] root_26) | ([0-9]))
root_27 ::= ("" | (root_26 "S"))
root_28 ::= ("" | (root_25 "M" root_27))
root_29 ::= (([0-9] root_29) | ([0-9]))
root_30 ::= ((root_1 "D") | (root_2 "M" root_4) | (root_5 "Y" root_9))
root_31 ::= ((root_20 "S") | (root_21 "M" root_23) | (root_24 "H" root_28))
root_32 ::= ((root_30 root_19) | ("T" root_31) | (root_29 "W"))
root_19_1 ::= ((root_10 "S") | (root_11 "M" root_13) | (root_14 "H" root_18))"###,
    ),
    (
        "ipv4",
        r###"root ::= ((root_3{3, 3} root_6))
root_1 ::= ("" | ([0-1]))
root_2 ::= ("" | ([0-9]))
root_3 ::= ((root_3_1 "."))
root_4 ::= ("" | ([0-1]))
root_5 ::= ("" | ([0-9]))
root_6 ::= (("2" "5" [0-5]) | ("2" [0-4] [0-9]) | (root_4 root_5 [0-9]))
root_3_1 ::= (("2" "5" [0-5]) | ("2" [0-4] [0-9]) | (root_1 root_2 [0-9]))"###,
    ),
    (
        "ipv6",
        r###"root ::= ((root_2{7, 7} root_3{1, 4}) | (root_5{1, 7} ":") | (root_7{1, 6} ":" root_8{1, 4}) | (root_10{1, 5} root_12{1, 2}) | (root_14{1, 4} root_16{1, 3}) | (root_18{1, 3} root_20{1, 4}) | (root_22{1, 2} root_24{1, 5}) | (root_25{1, 4} ":" root_27{1, 6}) | (":" root_45) | (":" ":" root_32{0, 1} root_35{3, 3} root_46) | (root_39{1, 4} ":" root_42{3, 3} root_47))
root_1 ::= (([0-9a-fA-F]))
root_2 ::= ((root_1{1, 4} ":"))
root_3 ::= (([0-9a-fA-F]))
root_4 ::= (([0-9a-fA-F]))
root_5 ::= ((root_4{1, 4} ":"))
root_6 ::= (([0-9a-fA-F]))
root_7 ::= ((root_6{1, 4} ":"))
root_8 ::= (([0-9a-fA-F]))
root_9 ::= (([0-9a-fA-F]))
root_10 ::= ((root_9{1, 4} ":"))
root_11 ::= (([0-9a-fA-F]))
root_12 ::= ((":" root_11{1, 4}))
root_13 ::= (([0-9a-fA-F]))
root_14 ::= ((root_13{1, 4} ":"))
root_15 ::= (([0-9a-fA-F]))
root_16 ::= ((":" root_15{1, 4}))
root_17 ::= (([0-9a-fA-F]))
root_18 ::= ((root_17{1, 4} ":"))
root_19 ::= (([0-9a-fA-F]))
root_20 ::= ((":" root_19{1, 4}))
root_21 ::= (([0-9a-fA-F]))
root_22 ::= ((root_21{1, 4} ":"))
root_23 ::= (([0-9a-fA-F]))
root_24 ::= ((":" root_23{1, 4}))
root_25 ::= (([0-9a-fA-F]))
root_26 ::= (([0-9a-fA-F]))
root_27 ::= ((":" root_26{1, 4}))
root_28 ::= (([0-9a-fA-F]))
root_29 ::= ((":" root_28{1, 4}))
root_30 ::= (("0"))
root_31 ::= ((":" root_30{1, 4}))
root_32 ::= (("f" "f" "f" "f" root_31{0, 1} ":"))
root_33 ::= (("1"))
root_34 ::= (("2" [0-4]) | (root_33{0, 1} [0-9]))
root_35 ::= ((root_35_1 "."))
root_36 ::= (("1"))
root_37 ::= (("2" [0-4]) | (root_36{0, 1} [0-9]))
root_38 ::= (([0-9a-fA-F]))
root_39 ::= ((root_38{1, 4} ":"))
root_40 ::= (("1"))
root_41 ::= (("2" [0-4]) | (root_40{0, 1} [0-9]))
root_42 ::= ((root_42_1 "."))
root_43 ::= (("1"))
root_44 ::= (("2" [0-4]) | (root_43{0, 1} [0-9]))
root_45 ::= ((root_29{1, 7}) | (":"))
root_46 ::= (("2" "5" [0-5]) | (root_37{0, 1} [0-9]))
root_47 ::= (("2" "5" [0-5]) | (root_44{0, 1} [0-9]))
root_35_1 ::= (("2" "5" [0-5]) | (root_34{0, 1} [0-9]))
root_42_1 ::= (("2" "5" [0-5]) | (root_41{0, 1} [0-9]))"###,
    ),
    (
        "hostname",
        r###"root ::= (([a-z0-9] root_1 root_3))
root_1 ::= ("" | ([a-z0-9\-]* [a-z0-9]))
root_2 ::= ("" | ([a-z0-9\-]* [a-z0-9]))
root_3 ::= ("" | ("." [a-z0-9] root_2 root_3))"###,
    ),
    (
        "uuid",
        r###"root ::= ((root_1{8, 8} "-" root_2{4, 4} "-" root_3{4, 4} "-" root_4{4, 4} "-" root_5{12, 12}))
root_1 ::= (([0-9A-Fa-f]))
root_2 ::= (([0-9A-Fa-f]))
root_3 ::= (([0-9A-Fa-f]))
root_4 ::= (([0-9A-Fa-f]))
root_5 ::= (([0-9A-Fa-f]))"###,
    ),
    (
        "uri",
        r###"root ::= (([a-zA-Z] [a-zA-Z+.\-]* ":" root_16 root_13 root_15))
root_1 ::= ("" | (root_1_1 root_1))
root_2 ::= ("" | (root_1 "@"))
root_3 ::= ("" | (root_3_1 root_3))
root_4 ::= ("" | (":" [0-9]*))
root_5 ::= ("" | (root_5_1 root_5))
root_6 ::= ("" | ("/" root_5 root_6))
root_7 ::= ("" | ("/"))
root_8 ::= ((root_8_1 root_8) | ([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_9 ::= ("" | (root_9_1 root_9))
root_10 ::= ("" | ("/" root_9 root_10))
root_11 ::= ("" | (root_8 root_10))
root_12 ::= ("" | (root_12_1 root_12))
root_13 ::= ("" | ("\?" root_12))
root_14 ::= ("" | (root_14_1 root_14))
root_15 ::= ("" | ("#" root_14))
root_16 ::= (("/" "/" root_2 root_3 root_4 root_6) | (root_7 root_11))
root_1_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_3_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_5_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_8_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_9_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_12_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@/\?\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_14_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@/\?\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))"###,
    ),
    (
        "uri-reference",
        r###"root ::= ((root_14 root_16 root_18))
root_1 ::= ("" | (root_1_1 root_1))
root_2 ::= ("" | (root_1 "@"))
root_3 ::= ("" | (root_3_1 root_3))
root_4 ::= ("" | (":" [0-9]*))
root_5 ::= ("" | (root_5_1 root_5))
root_6 ::= ("" | ("/" root_5 root_6))
root_7 ::= ((root_7_1 root_7) | ([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_8 ::= ("" | (root_8_1 root_8))
root_9 ::= ("" | ("/" root_8 root_9))
root_10 ::= ("" | (root_7 root_9))
root_11 ::= ((root_11_1 root_11) | ([a-zA-Z0-9_.~!$&\'()*+,;=@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_12 ::= ("" | (root_12_1 root_12))
root_13 ::= ("" | ("/" root_12 root_13))
root_14 ::= ("" | ("/" "/" root_2 root_3 root_4 root_6) | ("/" root_10) | (root_11 root_13))
root_15 ::= ("" | (root_15_1 root_15))
root_16 ::= ("" | ("\?" root_15))
root_17 ::= ("" | (root_17_1 root_17))
root_18 ::= ("" | ("#" root_17))
root_1_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_3_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_5_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_7_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_8_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_11_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_12_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_15_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@/\?\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_17_1 ::= (([a-zA-Z0-9_.~!$&\'()*+,;=:@/\?\-]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))"###,
    ),
    (
        "uri-template",
        r###"root ::= ((root_15))
root_1 ::= ("" | ([+#./;\?&=,!@|]))
root_2 ::= ("" | ("."))
root_3 ::= ("" | (root_2 root_3_1 root_3))
root_4 ::= ("" | ([0-9]))
root_5 ::= ("" | ([0-9]))
root_6 ::= ("" | ([0-9]))
root_7 ::= ("" | (":" [1-9] root_4 root_5 root_6) | ("*"))
root_8 ::= ("" | ("."))
root_9 ::= ("" | (root_8 root_9_1 root_9))
root_10 ::= ("" | ([0-9]))
root_11 ::= ("" | ([0-9]))
root_12 ::= ("" | ([0-9]))
root_13 ::= ("" | (":" [1-9] root_10 root_11 root_12) | ("*"))
root_14 ::= ("" | ("," root_14_1 root_9 root_13 root_14))
root_15 ::= ("" | (root_15_2 root_15))
root_3_1 ::= (([a-zA-Z0-9_]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_9_1 ::= (([a-zA-Z0-9_]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_14_1 ::= (([a-zA-Z0-9_]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_15_1 ::= (([a-zA-Z0-9_]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]))
root_15_2 ::= (([!#-$&(-;=\?-[\]_a-z~]) | ("%" [0-9A-Fa-f] [0-9A-Fa-f]) | ("{" root_1 root_15_1 root_3 root_7 root_14 "}"))"###,
    ),
    (
        "json-pointer",
        r###"root ::= ((root_2))
root_1 ::= ("" | (root_1_1 root_1))
root_2 ::= ("" | ("/" root_1 root_2))
root_1_1 ::= (([\0-.]) | ([0-}]) | ([\x7f-\U0010ffff]) | ("~" [01]))"###,
    ),
    (
        "relative-json-pointer",
        r###"root ::= ((root_3 root_4))
root_1 ::= ("" | (root_1_1 root_1))
root_2 ::= ("" | ("/" root_1 root_2))
root_3 ::= (("0") | ([1-9] [0-9]*))
root_4 ::= (("#") | (root_2))
root_1_1 ::= (([\0-.]) | ([0-}]) | ([\x7f-\U0010ffff]) | ("~" [01]))"###,
    ),
];
